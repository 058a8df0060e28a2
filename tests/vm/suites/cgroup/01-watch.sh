#!/bin/sh
# daemon/internal/cgroup on the real cgroup2 mount: ids are the kernel's cgroup
# ids, and a removed cgroup is seen through inotify (TestVM*, CGPU_VM=1).
# vm-timeout: 120
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

bin=/opt/cgpu/bin/cgroup.test
[ -x $bin ] || fail "no $bin (make guest builds it: guest-cgroup)"

CGPU_VM=1 $bin -test.v -test.count=1 -test.run '^TestVM' >/tmp/cgroup.out 2>&1
rc=$?
cat /tmp/cgroup.out
[ $rc -eq 0 ] || fail "cgroup.test exited $rc"
if grep -q -- '--- SKIP' /tmp/cgroup.out; then
	fail "a test skipped in the VM"
fi
grep -q -- '--- PASS: TestVMWatchInotify' /tmp/cgroup.out || fail "TestVMWatchInotify did not run"
