#!/bin/sh
# 64 threads racing allocations never take an instance past its limit:
# exactly limit / size of them succeed, peak never exceeds the limit.
# vm-timeout: 300
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 64M t_a
hold_in t_a -q threads 64 2M 4
grep -q 'threads 64 2M 4: ok=32 oom=224 errors=0 bytes=67108864' "$hold_out" ||
	fail "want exactly 32 of 256 allocations: $(cat "$hold_out")"
expect_used t1 $((64 * MIB)) "full"
assert_eq $((64 * MIB)) "$(nv_used 0)" "nvmock agrees"
assert_eq $((64 * MIB)) "$(stat_of t1 peak)" "peak"
kill_hold "$hold_pid"

echo "### 64 threads of odd sizes, a limit that is no multiple of them"
instance t2 0 50000000 t_b
hold_in t_b -q threads 64 3M 8
used=$(stat_of t2 used)
[ "$used" -le 50000000 ] || fail "used $used over the limit"
[ "$used" -gt $((50000000 - 4 * MIB)) ] || fail "used $used: a 4 MiB allocation would still fit"
assert_eq "$used" "$(nv_used 0)" "nvmock agrees"
peak=$(stat_of t2 peak)
[ "$peak" -le 50000000 ] || fail "peak $peak over the limit"
kill_hold "$hold_pid"
expect_idle "at the end"
