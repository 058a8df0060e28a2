#!/bin/sh
# fakecuda holding memory in an attached cgroup: stats show it, destroy and
# a lower limit are EBUSY (ErrBusy), destroy works once it is gone.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/run-go-test.inc
. "$(dirname "$0")/run-go-test.inc"
module_loaded cgpu || fail "cgpu.ko is not loaded"
go_vm_test kernel.test '^TestVMBusy$'
