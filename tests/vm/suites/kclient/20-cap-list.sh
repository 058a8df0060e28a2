#!/bin/sh
# The 21st instance on a GPU is ENOSPC (ErrNoSpace), so is a weight that
# does not fit; List grows its buffer past 160 ids and keeps the order.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/run-go-test.inc
. "$(dirname "$0")/run-go-test.inc"
module_loaded cgpu || fail "cgpu.ko is not loaded"
go_vm_test kernel.test '^TestVMCapAndLongList$'
