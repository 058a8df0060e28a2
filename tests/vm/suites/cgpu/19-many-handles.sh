#!/bin/sh
# Hundreds of live handles in one client: the client's object table (16
# chains, doubled past 8 a chain: at 128, 256 and 512) and the UVM mapping
# table (64 buckets, doubled past 4 a bucket: at 256 and 512) grow through
# several resizes, shrink again as the handles go, and every charge is
# credited exactly once on the way.  (600, not more: on the debug kernel an
# allocation with its mapping costs tens of milliseconds.)
# vm-timeout: 400
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

N=600
HOLD_WAIT=2400 # deciseconds for hold_in: 2100 calls in the second holder
HOLD_QUIET=1   # 1500 lines of output: the count and the last lines
instance t1 0 1G t_a
args=
i=0
while [ $i -lt $N ]; do
	args="$args alloc 64K"
	i=$((i + 1))
done

echo "### $N allocations held in one process"
# shellcheck disable=SC2086 # one word per argument wanted
hold_in t_a -q $args
assert_eq $N "$(stat_of t1 live)" "live allocations"
expect_used t1 $((N * 64 * KIB)) "all held"
assert_eq $((N * 64 * KIB)) "$(nv_used 0)" "nvmock agrees"
kill_hold "$hold_pid"
expect_used t1 0 "after kill -9"

echo "### $N made, all freed, $N made again, half freed, held"
half=
i=0
while [ $i -lt $((N / 2)) ]; do
	half="$half free last"
	i=$((i + 1))
done
# shellcheck disable=SC2086
hold_in t_a -q $args free all $args $half
grep -q "free all: OK freed=$N" "$hold_out" || fail "free all: $(grep 'free all' "$hold_out")"
assert_eq $((N - N / 2)) "$(stat_of t1 live)" "live allocations"
expect_used t1 $(((N - N / 2) * 64 * KIB)) "half held"
assert_eq $(((N - N / 2) * 64 * KIB)) "$(nv_used 0)" "nvmock agrees"
assert_eq $((N * 64 * KIB)) "$(stat_of t1 peak)" "peak"
kill_hold "$hold_pid"
expect_idle "at the end"
