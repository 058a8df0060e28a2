#!/bin/sh
# The Go Device on the real /dev/cgpu: version, create, stats, list, set,
# attach to a real cgroup (its inode), detach, destroy, and the errors
# ENOENT, EEXIST, EINVAL mapped to the kernel package's sentinels.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/run-go-test.inc
. "$(dirname "$0")/run-go-test.inc"
module_loaded cgpu || fail "cgpu.ko is not loaded"
go_vm_test kernel.test '^TestVMLifecycle$'
