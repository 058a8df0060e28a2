#!/bin/sh
# A filter outlives the process that made it (a daemon restart): one
# process applies it and exits, the shell sees it still hold, a second
# process finds it with Pinned and removes it.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

bin=/opt/cgpu/bin/devfilter.test
[ -x $bin ] || fail "no $bin (make guest builds it: guest-devfilter)"
[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2
cg=/sys/fs/cgroup/devfilter-restart
export CGPU_VM=1 CGPU_VM_STATE=/tmp/devfilter.state

# try_open DEV: open DEV from a new shell inside the cgroup; prints the
# shell's error, if any, and exits with its status.
try_open() {
	sh -c "echo \$\$ >$cg/cgroup.procs && exec 3<$1" 2>&1
}

$bin -test.v -test.count=1 -test.run '^TestRestartApply$' || fail "apply phase"
[ -d $cg ] || fail "the apply phase left no cgroup"
ls -l /sys/fs/bpf/cgpu/

# The first process is gone; its pinned link must still deny GPU 0.
out=$(try_open /dev/nvidia0) && fail "GPU 0 opened in the cgroup after the applying process exited"
echo "nvidia0 in the cgroup: $out"
case $out in *"not permitted"*) ;; *) fail "want EPERM for /dev/nvidia0, got: $out" ;; esac
out=$(try_open /dev/cgpu) && fail "/dev/cgpu opened in the cgroup"
echo "cgpu in the cgroup: $out"
try_open /dev/nvidia1 || fail "GPU 1 (assigned) did not open"
exec 3</dev/nvidia0 || fail "GPU 0 did not open outside the cgroup"
exec 3<&-

$bin -test.v -test.count=1 -test.run '^TestRestartCheck$' || fail "check phase"
[ -d $cg ] && fail "the check phase left the cgroup"
left=$(find /sys/fs/bpf/cgpu -name 'devfilter-*')
[ -z "$left" ] || fail "pins left: $left"
exit 0
