#!/bin/sh
# Forked processes: children inherit the cgroup and are charged on their own;
# fds a child inherits and closes do not credit the parent's memory; every
# exit gives back exactly what that process held.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 3M t_a
# each child holds its memory for a while, so all four overlap
fc_in t_a 2 -q children 4 alloc 1M hold 5
expect_line "children 4: ok=3 cuda_errors=1 failed=0"
expect_used t1 0 "after the children"
assert_eq 3 "$(stat_of t1 allocs)" "three charged"

echo "### the parent keeps its memory while its children come and go"
# The children inherit the parent's fds and close them: that is no release.
fc_in t_a 0 -q alloc 1M children 2 alloc 1M hold 1
expect_line "children 2: ok=2 cuda_errors=0 failed=0"
assert_eq $((3 * MIB)) "$(stat_of t1 peak)" "peak: parent and both children"
assert_eq 6 "$(stat_of t1 allocs)" "allocations charged in all"
expect_idle "at the end"
