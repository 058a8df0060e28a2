#!/bin/sh
# Two containers with 4 GiB slices on GPU 0: while the first holds 3 GiB,
# the second still sees a 4 GiB card with 4 GiB free, gets its whole 4 GiB
# and not a byte more; neither can open GPU 1 or /dev/cgpu (cgpud's device
# filter on top of runc's devices rules); `cgpuctl inspect -d` tells them
# apart.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2
start_daemon
bundle iso-a -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- fakecuda alloc 3G hold
run_bg iso-a
assert_eq 0 "$rc" "runc run -d iso-a: $out"
wait_out iso-a holding

# shellcheck disable=SC2016 # expanded in the container
bundle iso-b -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- \
	sh -c 'fakecuda meminfo alloc 4G alloc 1; echo "fakecuda=$?"; for d in nvidia0 nvidia1; do if (exec 3</dev/$d) 2>/dev/null; then echo "open $d: yes"; else echo "open $d: no"; fi; done'
run_fg iso-b
assert_eq 0 "$rc" "runc run iso-b"
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) free=$((4 * GIB)) " || fail "iso-b's meminfo is not its own untouched 4 GiB slice"
echo "$out" | grep -q "^alloc 4G: OK " || fail "iso-b could not take its whole slice while iso-a held 3 GiB"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "iso-b went past its slice"
echo "$out" | grep -q "^fakecuda=2$" || fail "fakecuda's exit in iso-b"
echo "$out" | grep -q "^open nvidia0: yes$" || fail "iso-b cannot open its GPU"
echo "$out" | grep -q "^open nvidia1: no$" || fail "iso-b opened GPU 1, outside its slice"

echo "### iso-a's 3 GiB is iso-a's in cgpuctl inspect -d"
d=$(cgpuctl inspect -d) || fail "cgpuctl inspect -d: $d"
echo "$d"
echo "$d" | grep -Eq '^iso-a +iso-a +0 +4 +3 ' || fail "inspect -d: iso-a's row is not 4 GiB with 3 used"
d=$(cgpuctl instance ls -o json)
echo "$d" | grep -q "\"used\": *$((3 * GIB))" || fail "instance ls: iso-a's used is not 3 GiB: $d"

stop iso-a
assert_clean "after both containers stopped"
pass
