#!/bin/sh
# The static Go discovery tool finds the mock GPUs through procfs and the RM
# ABI, and reports each card's memory exactly as nvmock's counters do.
. /opt/cgpu/lib.sh

out=$(nvinfo -json) || fail "nvinfo failed: $out"
echo "$out"
n=$(echo "$out" | grep -c '"uuid"')
assert_eq 2 "$n" "GPUs found"
for i in 0 1; do
	total=$(nvmock_counter "gpu$i/total_bytes")
	echo "$out" | grep -q "\"memory_total\": $total," || fail "gpu$i: memory_total $total not reported"
	uuid=$(grep 'GPU UUID' /proc/driver/nvidia/gpus/*/information | sed -n "$((i + 1))p" | awk '{print $NF}')
	echo "$out" | grep -q "\"uuid\": \"$uuid\"" || fail "gpu$i: uuid $uuid not reported"
done
