#!/bin/sh
# Threads racing on one client: every allocation is accounted, and racing
# threads cannot together exceed the card.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 threads 8 64M 4 meminfo
expect_line "^threads 8 64M 4: ok=32 oom=0 errors=0 bytes=$((2 * GIB))$"
assert_eq "$((CARD - 2 * GIB))" "$(val free '^meminfo:')" "free after 32 x 64 MiB"
expect_idle "after exit"

start_hold threads 8 64M 4
expect_counters "holding 32 x 64 MiB from 8 threads" 1 0 $((2 * GIB)) 32
stop_hold
expect_idle "after kill -9"

# kill -9 while 8 threads are inside the driver: once the mock holds some
# of their allocations (2000 x 1M each, 16000 MiB of the 16384 MiB card, so
# that the run lasts), and only if the process is still allocating then.
fakecuda -q threads 8 1M 2000 >/tmp/threads.out 2>&1 &
pid=$!
# (or ended: the exit status below says so)
allocating() { [ "$(allocs)" -gt 0 ] || ! kill -0 $pid 2>/dev/null; }
wait_for 60 allocating
kill -9 $pid
wait $pid
rc=$?
cat /tmp/threads.out
[ "$rc" -eq 137 ] || fail "fakecuda threads ended (exit $rc) before the kill -9: no thread was in the driver"
expect_idle "after kill -9 of 8 allocating threads"

reload_nvmock mem_mib=1024
fc 2 threads 8 64M 4 meminfo free all meminfo
expect_line "^threads 8 64M 4: ok=16 oom=16 errors=0 bytes=$GIB$"
assert_eq 0 "$(nth_val 1 free '^meminfo:')" "free of the full 1 GiB card"
expect_line "^free all: OK freed=16$"
assert_eq "$GIB" "$(nth_val 2 free '^meminfo:')" "free after free all"
# 3 MiB rounds to 4 MiB: 256 fit in 1 GiB, 64 of 320 are refused.
fc 2 threads 16 3M 20
expect_line "^threads 16 3M 20: ok=256 oom=64 errors=0 bytes=$GIB$"
reload_nvmock
expect_idle "at the end"
