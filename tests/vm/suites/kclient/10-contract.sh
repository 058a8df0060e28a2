#!/bin/sh
# The contract (daemon/internal/kernel/contract_test.go) on the real
# /dev/cgpu: every Client call and its errors (EINVAL, EEXIST, ENOENT,
# ENOSPC, EBUSY), cgroups attached, removed and detached, fakecuda holding
# memory against a lower limit and a destroy, per-GPU max_inst. The same
# cases run against kernel.Fake in plain go test.
# vm-timeout: 300
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/run-go-test.inc
. "$(dirname "$0")/run-go-test.inc"
module_loaded cgpu || fail "cgpu.ko is not loaded"
go_vm_test kernel.test '^TestContractDevice$'
