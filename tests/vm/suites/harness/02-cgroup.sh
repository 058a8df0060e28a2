#!/bin/sh
# cgroup v2 is mounted with the controllers cgpu needs enabled for children,
# and a child cgroup takes a process.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

cg=/sys/fs/cgroup
[ -f $cg/cgroup.controllers ] || fail "no cgroup v2 at $cg"
echo "controllers: $(cat $cg/cgroup.controllers)"
echo "enabled:     $(cat $cg/cgroup.subtree_control)"
for c in memory pids cpu; do
	grep -qw $c $cg/cgroup.subtree_control || fail "controller $c not enabled in $cg/cgroup.subtree_control"
done
mkdir $cg/harness-test || fail "mkdir a child cgroup"
[ -f $cg/harness-test/memory.max ] || fail "child cgroup has no memory.max"
sh -c "echo \$\$ > $cg/harness-test/cgroup.procs; cat /proc/self/cgroup" >/tmp/cg.out
assert_eq "0::/harness-test" "$(cat /tmp/cg.out)" "a process moved into the child cgroup"
rmdir $cg/harness-test || fail "rmdir the child cgroup"
