#!/bin/sh
# The device filter on real cgroups: a child process opens each device
# (daemon/internal/devfilter's TestVM* tests, run as root with CGPU_VM=1).
# vm-timeout: 240
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

bin=/opt/cgpu/bin/devfilter.test
[ -x $bin ] || fail "no $bin (make guest builds it: guest-devfilter)"
[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2

CGPU_VM=1 $bin -test.v -test.count=1 -test.run '^TestVM' >/tmp/devfilter.out 2>&1
rc=$?
cat /tmp/devfilter.out
[ $rc -eq 0 ] || fail "devfilter.test exited $rc"
# Under CGPU_VM=1 nothing may skip: a skip would hide an untested path.
if grep -q -- '--- SKIP' /tmp/devfilter.out; then
	fail "a test skipped in the VM"
fi
grep -q -- '--- PASS: TestVMFilter' /tmp/devfilter.out || fail "TestVMFilter did not run"
