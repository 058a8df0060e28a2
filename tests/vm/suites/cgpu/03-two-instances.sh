#!/bin/sh
# Two instances on one GPU are isolated: one full does not limit the other,
# each is charged only its own processes' memory. A cgroup with a slice on
# GPU 0 only is refused memory on GPU 1 (fail closed), not let through
# uncharged.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 2M t_a
instance t2 0 4M t_b

hold_in t_a -q alloc 2M
fc_in t_a 2 alloc 64K
hold_in t_b -q alloc 2M alloc 2M
fc_in t_b 2 alloc 64K
expect_used t1 "$((2 * MIB))" "t1"
expect_used t2 "$((4 * MIB))" "t2"
assert_eq "$((6 * MIB))" "$(nv_used 0)" "nvmock: both"
assert_eq 1 "$(stat_of t1 procs)" "t1 processes"

echo "### freeing in one does not help the other"
kill_hold "$hold_pid"
expect_used t2 0 "t2 after its process went"
expect_used t1 "$((2 * MIB))" "t1 untouched"
fc_in t_a 2 alloc 64K
fc_in t_b 0 alloc 4M

echo "### an instance on GPU 1 for the same cgroup"
instance t3 1 1M
adm attach t3 "$CG/t_a"
fc_in t_a 0 -g 1 alloc 1M
fc_in t_a 2 -g 1 alloc 1M alloc 64K
fc_in t_a 2 -g 0 alloc 64K
expect_used t3 0 "t3 after"

echo "### a slice on GPU 0 only: GPU 1 is refused, not free"
fc_in t_b 2 -g 1 alloc 1M
expect_line "^alloc 1M: CUDA_ERROR_OUT_OF_MEMORY"
assert_eq 0 "$(nv_used 1)" "nvmock: nothing on GPU 1"
