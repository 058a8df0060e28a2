#!/bin/sh
# A live instance's limit can grow or shrink, never below what is in use.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 4M t_a
hold_in t_a -q alloc 2M
adm_err EBUSY set t1 --mem 1M
echo $MIB >/proc/cgpu_km/0/t1/memsize 2>/dev/null && fail "memsize below use accepted"
assert_eq $((4 * MIB)) "$(stat_of t1 limit)" "limit unchanged"
adm set t1 --mem 2M
fc_in t_a 2 alloc 64K
adm set t1 --mem 8M
fc_in t_a 0 alloc 6M
echo $((2 * MIB + 64 * KIB)) >/proc/cgpu_km/0/t1/memsize || fail "memsize write"
fc_in t_a 0 alloc 64K
fc_in t_a 2 alloc 64K alloc 64K
kill_hold "$hold_pid"
adm set t1 --mem 64K
fc_in t_a 2 alloc 64K alloc 64K
expect_idle "at the end"
