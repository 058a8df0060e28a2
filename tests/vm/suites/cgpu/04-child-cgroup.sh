#!/bin/sh
# A task in a descendant of an attached cgroup is charged to the instance;
# the nearest attached ancestor wins.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 2M t_p
mkcg t_p/t_c/t_g
hold_in t_p/t_c/t_g -q alloc 1M
expect_used t1 "$MIB" "charged from a grandchild"
fc_in t_p/t_c 2 alloc 1M alloc 64K
expect_line "^alloc 64K: CUDA_ERROR_OUT_OF_MEMORY"

echo "### a nearer instance takes over"
instance t2 0 8M
adm attach t2 "$CG/t_p/t_c"
fc_in t_p/t_c/t_g 0 alloc 4M
expect_used t1 "$MIB" "t1 keeps only the first process"
kill_hold "$hold_pid"
expect_idle "at the end"
