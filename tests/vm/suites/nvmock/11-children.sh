#!/bin/sh
# Forked processes, each with its own context, allocating in parallel: all
# of it is accounted, a full card refuses the losers exactly, and nothing
# is left when they end, whether they exit or are killed.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

EACH=$((256 * MIB + 4 * MIB))

fc 0 children 4 alloc 256M alloc 3M meminfo free all
expect_line "^children 4: ok=4 cuda_errors=0 failed=0$"
assert_eq 4 "$(echo "$out" | grep -c '^child[0-3]: free all: OK freed=2$')" "children that freed"
expect_idle "after 4 children exited"

start_hold -n 4 children 4 alloc 256M alloc 3M
expect_counters "4 children holding" 4 0 $((4 * EACH)) 8
# shellcheck disable=SC2013  # one pid per line, words are fine
for pid in $(sed -n 's/^child[0-9]*: holding pid=\([0-9]*\)$/\1/p' "$hold_out"); do
	kill -9 "$pid"
done
wait "$hold_pid"
rc=$?
hold_pid=
cat "$hold_out"
assert_eq 1 "$rc" "parent's exit status when its children were killed"
expect_held "^children 4: ok=0 cuda_errors=0 failed=4$"
expect_idle "after the children were killed"

# 1 GiB card, 4 children of 512 MiB that hold: exactly 2 fit.
reload_nvmock mem_mib=1024
start_hold -n 4 children 4 alloc 512M
assert_eq 2 "$(grep -c '^child[0-3]: alloc 512M: CUDA_ERROR_OUT_OF_MEMORY' "$hold_out")" "children refused"
assert_eq 2 "$(grep -c '^child[0-3]: alloc 512M: OK' "$hold_out")" "children served"
expect_counters "2 of 4 children served on a 1 GiB card" 4 0 "$GIB" 2
for pid in $(sed -n 's/^child[0-9]*: holding pid=\([0-9]*\)$/\1/p' "$hold_out"); do
	kill -9 "$pid"
done
wait "$hold_pid"
hold_pid=
expect_held "^children 4: ok=0 cuda_errors=0 failed=4$"
reload_nvmock
expect_idle "at the end"
