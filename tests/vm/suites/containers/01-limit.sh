#!/bin/sh
# A runc container with ALIYUN_COM_GPU_MEM_CONTAINER=4: the cgpuctl hook
# gets it a 4 GiB slice bound to its cgroup; inside, the fake CUDA client
# sees a 4 GiB card, allocates up to 4 GiB and the next byte is
# CUDA_ERROR_OUT_OF_MEMORY. The same allocations outside any container
# succeed (the limit is the slice's, not the mock card's).
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
bundle lim -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- \
	fakecuda meminfo alloc 1G alloc 2G alloc 1G meminfo alloc 1
run_fg lim
assert_eq 2 "$rc" "fakecuda's exit (2: a CUDA error, the last allocation)"
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) free=$((4 * GIB)) " || fail "meminfo before the allocations is not the 4 GiB slice"
for a in "alloc 1G" "alloc 2G"; do
	echo "$out" | grep -q "^$a: OK " || fail "$a inside the slice was refused"
done
[ "$(echo "$out" | grep -c '^alloc 1G: OK ')" = 2 ] || fail "the second 1G (reaching exactly 4 GiB) was refused"
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) free=0 " || fail "meminfo at the limit is not total=4 GiB free=0"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "one byte past 4 GiB was not refused with OUT_OF_MEMORY"

echo "### the same client outside any container is not limited"
o=$(fakecuda -q alloc 1G alloc 2G alloc 1G alloc 1 2>&1) || fail "fakecuda on the host got an error: $o"

echo "### after the container exits the slice is gone"
assert_clean "after the container exited"
pass
