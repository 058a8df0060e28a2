#!/bin/sh
# VID_HEAP_CONTROL ALLOC_SIZE / FREE / INFO (docs/nvidia-abi.md 10.9, 10.10):
# vidmem charged like RM_ALLOC 0x40, INFO in bytes.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 legacy-info
assert_eq "$CARD" "$(val total '^legacy-info:')" "INFO total on an idle card"
assert_eq "$CARD" "$(val free '^legacy-info:')" "INFO free on an idle card"

fc 0 legacy-alloc 1G legacy-info legacy-alloc 1 legacy-info legacy-free last legacy-info legacy-free last legacy-info
assert_eq "$GIB" "$(val size '^legacy-alloc 1G:')" "size of 1 GiB"
assert_eq 65536 "$(val size '^legacy-alloc 1:')" "size of 1 B"
assert_eq "$((CARD - GIB))" "$(nth_val 1 free '^legacy-info:')" "INFO free after 1 GiB"
assert_eq "$((CARD - GIB - 65536))" "$(nth_val 2 free '^legacy-info:')" "INFO free after 1 GiB + 64 KiB"
assert_eq "$((CARD - GIB))" "$(nth_val 3 free '^legacy-info:')" "INFO free after freeing 64 KiB"
assert_eq "$CARD" "$(nth_val 4 free '^legacy-info:')" "INFO free after freeing both"
assert_eq 2 "$(echo "$out" | grep -c '^legacy-free 0x[0-9a-f]*: OK$')" "legacy-free OK lines"
expect_idle "after exit"

# INFO and FB_GET_INFO_V2 agree.
fc 0 legacy-alloc 3M alloc 5M legacy-info meminfo
assert_eq "$(val free '^meminfo:')" "$(val free '^legacy-info:')" "INFO free vs FB_GET_INFO_V2 free"
assert_eq "$((CARD - 4 * MIB - 6 * MIB))" "$(val free '^meminfo:')" "free after 3 MiB (->4) and 5 MiB (->6)"

start_hold legacy-alloc 1G
expect_counters "holding a VID_HEAP allocation" 1 0 $GIB 1
stop_hold
expect_idle "after kill -9"

start_hold legacy-alloc 1G legacy-alloc 2M legacy-free last
expect_counters "after VID_HEAP FREE of one of two" 1 0 $GIB 1
stop_hold

fc 2 legacy-alloc 17G
expect_line "^legacy-alloc 17G: CUDA_ERROR_OUT_OF_MEMORY (status 0x51 NV_ERR_NO_MEMORY)$"
expect_idle "at the end"
