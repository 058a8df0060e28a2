#!/bin/sh
# RM_DUP_OBJECT adds a reference (docs/nvidia-abi.md 4, 10.1): freeing the
# original leaves the bytes in use, freeing the duplicate too returns them.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 alloc 1G dup last meminfo free 0xcf000004 meminfo free 0xcf000005 meminfo
expect_line "^alloc 1G: OK handle=0xcf000004 size=$GIB "
expect_line "^dup 0xcf000004: OK handle=0xcf000005$"
assert_eq "$((CARD - GIB))" "$(nth_val 1 free '^meminfo:')" "free with original + dup"
assert_eq "$((CARD - GIB))" "$(nth_val 2 free '^meminfo:')" "free after freeing the original"
assert_eq "$CARD" "$(nth_val 3 free '^meminfo:')" "free after freeing the dup too"
expect_idle "after exit"

start_hold alloc 1G dup last dup last
expect_counters "original + 2 dups: one allocation" 1 0 $GIB 1
stop_hold
expect_idle "after kill -9 of original + dups"

start_hold alloc 1G dup last free 0xcf000004
expect_counters "dup alive, original freed" 1 0 $GIB 1
stop_hold
expect_idle "after kill -9 of a dup holder"

start_hold alloc 1G dup last free 0xcf000005 free 0xcf000004
expect_counters "dup and original freed" 1 0 0 0
stop_hold

# The device takes the original and the dup with it.
start_hold alloc 1G dup last free-device
expect_counters "device freed with original + dup under it" 1 0 0 0
stop_hold

fc 2 dup 0x1234
expect_line "^dup 0x1234: CUDA_ERROR_INVALID_HANDLE (status 0x57 NV_ERR_OBJECT_NOT_FOUND)$"
expect_idle "at the end"
