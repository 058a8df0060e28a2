#!/bin/sh
# Every way memory goes back (docs/nvidia-abi.md 4, 10.3): explicit frees, the
# device freed as a parent, the client freed, the fd closed by a normal
# exit, kill -9. Each time the counters return to exactly zero.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

BYTES=$((GIB + 4 * MIB)) # 1 GiB + 3 MiB rounded to 4 MiB

expect_idle "at start"

echo "### held allocations, then kill -9"
start_hold alloc 1G alloc 3M
expect_counters "holding 1 GiB + 3 MiB" 1 0 $BYTES 2 1 0 0
stop_hold
expect_idle "after kill -9"

echo "### on GPU 1"
start_hold -g 1 alloc 1G alloc 3M
expect_counters "holding on GPU 1" 1 0 0 0 1 $BYTES 2
stop_hold
expect_idle "after kill -9 on GPU 1"

echo "### normal exit without freeing (fd close)"
fc 0 alloc 1G alloc 3M meminfo
assert_eq "$((CARD - BYTES))" "$(val free '^meminfo:')" "free while allocated"
expect_idle "after exit without free"

echo "### explicit frees"
start_hold alloc 1G alloc 3M free last free all
expect_held "^free 0xcf000005: OK$"
expect_held "^free all: OK freed=1$"
expect_counters "after free last, free all (fds still open)" 1 0 0 0 1 0 0
stop_hold
expect_idle "after the explicit-free process ended"

echo "### free by handle"
start_hold alloc 1G alloc 3M free 0xcf000004
expect_counters "after freeing the 1 GiB handle" 1 0 $((4 * MIB)) 1
stop_hold

echo "### free-device"
start_hold alloc 1G alloc 3M free-device
expect_held "^free-device: OK handle=0xcf000001 freed=2$"
expect_counters "after RM_FREE of the device (fds still open)" 1 0 0 0
stop_hold
expect_idle "after the free-device process ended"

echo "### free-client"
start_hold alloc 1G alloc 3M free-client
expect_held "^free-client: OK handle=0xc1d[0-9a-f]* freed=2$"
expect_counters "after RM_FREE of the client (fds still open)" 0 0 0 0
stop_hold
expect_idle "after the free-client process ended"

echo "### after free-device the device is gone"
fc 2 alloc 1M free-device alloc 1M
expect_line "^free-device: OK"
expect_line "^alloc 1M: CUDA_ERROR_"
expect_idle "at the end"
