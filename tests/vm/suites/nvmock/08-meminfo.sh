#!/bin/sh
# cuMemGetInfo's numbers (FB_GET_INFO_V2, KiB x 1024) are live: total is
# the card, free drops by exactly what any process allocated on that GPU.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 meminfo
expect_line "^meminfo: total=$CARD free=$CARD heap=$CARD$"

fc 0 alloc 1G meminfo alloc 100K meminfo alloc 3M meminfo free all meminfo
assert_eq "$((CARD - GIB))" "$(nth_val 1 free '^meminfo:')" "free after 1 GiB"
assert_eq "$((CARD - GIB - 131072))" "$(nth_val 2 free '^meminfo:')" "free after 1 GiB + 100 KiB"
assert_eq "$((CARD - GIB - 131072 - 4 * MIB))" "$(nth_val 3 free '^meminfo:')" "free after + 3 MiB"
assert_eq "$CARD" "$(nth_val 4 free '^meminfo:')" "free after free all"
assert_eq "$CARD" "$(nth_val 4 total '^meminfo:')" "total never moves"

# Another process's allocation shows; the other GPU does not move.
start_hold alloc 2G
fc 0 meminfo
assert_eq "$((CARD - 2 * GIB))" "$(val free '^meminfo:')" "free while another process holds 2 GiB"
fc 0 -g 1 meminfo
assert_eq "$CARD" "$(val free '^meminfo:')" "GPU 1 free while GPU 0 is used"
stop_hold
fc 0 meminfo
assert_eq "$CARD" "$(val free '^meminfo:')" "free after the holder was killed"

# Per-GPU sizes.
reload_nvmock mem_mib=16384,8192
fc 0 -g 1 meminfo
expect_line "^meminfo: total=8589934592 free=8589934592 "
assert_eq 8589934592 "$(nvmock_counter gpu1/total_bytes)" "gpu1 total_bytes"
reload_nvmock
expect_idle "at the end"
