#!/bin/sh
# FB_GET_INFO_V2 and NVOS32 INFO: inside, the instance is the card (limit as
# total, limit - used free); outside, the real card.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 1G t_a
fc_in t_a 0 meminfo alloc 256M meminfo legacy-info
assert_eq "$GIB" "$(val total '^meminfo')" "total inside"
assert_eq "$GIB" "$(val heap '^meminfo')" "heap inside"
assert_eq "$GIB" "$(val free '^meminfo')" "free inside, nothing used"
assert_eq $((GIB - 256 * MIB)) "$(echo "$out" | grep '^meminfo' | sed -n 2p | sed 's/.*free=\([0-9]*\).*/\1/')" "free after 256M"
assert_eq "$GIB" "$(val total '^legacy-info')" "NVOS32 INFO total"
assert_eq $((GIB - 256 * MIB)) "$(val free '^legacy-info')" "NVOS32 INFO free"

echo "### outside"
fc_in - 0 meminfo legacy-info
assert_eq "$CARD" "$(val total '^meminfo')" "total outside"
assert_eq "$CARD" "$(val free '^meminfo')" "free outside"
assert_eq "$CARD" "$(val total '^legacy-info')" "NVOS32 INFO outside"

echo "### the card's own free memory still bounds the slice"
adm set t1 --mem 32G
fc_in t_a 0 meminfo
assert_eq "$CARD" "$(val total '^meminfo')" "a slice larger than the card"
expect_idle "at the end"
