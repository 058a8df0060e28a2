#!/bin/sh
# The OCI hook as a runtime calls it, without a runtime: a process in its
# own cgroup stands for the container. create-runtime makes the slice and
# the limit holds in that cgroup (meminfo shows it, one byte more is refused,
# managed memory is refused); without the variable, or with CGPU_DISABLE, or
# with the daemon down, a no-slice container is not affected; a slice that
# cannot be made fails closed and leaves nothing; poststop is idempotent.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2
start_daemon

echo "### create-runtime: a 4 GiB slice on GPU 0 bound to the container's cgroup"
holder rt-h1
bundle /tmp/rt-b1 ALIYUN_COM_GPU_MEM_CONTAINER=4 NVIDIA_VISIBLE_DEVICES=0
state ctr-h1 "$HPID" /tmp/rt-b1 creating >/tmp/rt-s1
out=$(cgpuctl hook create-runtime </tmp/rt-s1 2>&1) || fail "hook create-runtime: $out"
ctl instance ls --container ctr-h1 -o json
echo "$out" | grep -q '"cgroup": "/rt-h1"' || fail "no instance bound to /rt-h1"
echo "$out" | grep -q '"memory": 4294967296' || fail "slice is not 4 GiB"

echo "### the limit holds in the container's cgroup"
in_cg rt-h1 fakecuda meminfo alloc 2G alloc 2G alloc 1 managed 2M
echo "$out" | grep -q "meminfo: total=$((4 * GIB)) " || fail "meminfo does not show 4 GiB"
echo "$out" | grep -q "^alloc 2G: OK" || fail "allocation within the slice refused"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "one byte past the slice was allowed"
echo "$out" | grep -q "^managed 2M: CUDA_ERROR_NOT_SUPPORTED" || fail "managed memory was allowed"

echo "### a second container on the same GPU is isolated from the first"
holder rt-h2
bundle /tmp/rt-b2 ALIYUN_COM_GPU_MEM_CONTAINER=4096 ALIYUN_COM_GPU_MEM_UNIT=MiB ALIYUN_COM_GPU_VISIBLE_DEVICES=0
state ctr-h2 "$HPID" /tmp/rt-b2 creating | cgpuctl hook prestart || fail "hook prestart for the second container"
sh -c 'echo $$ >"$0/cgroup.procs" && exec fakecuda -q alloc 3G hold' "$CG/rt-h1" >/tmp/rt-hold.out 2>&1 &
hold=$!
HOLDERS="$HOLDERS $hold"
i=0
until grep -q holding /tmp/rt-hold.out; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the first container's allocation did not start: $(cat /tmp/rt-hold.out)"
	sleep 0.1
done
in_cg rt-h2 fakecuda meminfo alloc 4G alloc 1
echo "$out" | grep -q "^alloc 4G: OK" || fail "the second container cannot use its own 4 GiB"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "the second container exceeded its slice"
ctl inspect
echo "$out" | grep -q "  8/16  *0/16  *8/32$" || fail "inspect with two slices"
kill "$hold"
wait "$hold" 2>/dev/null

echo "### no slice asked: no instance, and the whole card"
holder rt-h3
bundle /tmp/rt-b3 PATH=/bin
state ctr-h3 "$HPID" /tmp/rt-b3 creating | cgpuctl hook create-runtime || fail "no-slice hook failed"
bundle /tmp/rt-b4 ALIYUN_COM_GPU_MEM_CONTAINER=4 CGPU_DISABLE=true
state ctr-h4 "$HPID" /tmp/rt-b4 creating | cgpuctl hook create-runtime || fail "disabled hook failed"
ctl instance ls --container ctr-h3 -o json
assert_eq "[]" "$out" "instances of a no-slice container"
in_cg rt-h3 fakecuda meminfo
echo "$out" | grep -q "meminfo: total=$((16 * GIB)) " || fail "a container without a slice does not see the whole card"

echo "### a slice that cannot be made: fail closed, nothing left behind"
holder rt-h5
bundle /tmp/rt-b5 ALIYUN_COM_GPU_MEM_CONTAINER=17 NVIDIA_VISIBLE_DEVICES=0
out=$(state ctr-h5 "$HPID" /tmp/rt-b5 creating | cgpuctl hook create-runtime 2>&1)
rc=$?
echo "$out"
[ "$rc" != 0 ] || fail "a 17 GiB slice on a 16 GiB card was accepted"
echo "$out" | grep -q "^cgpuctl: Error occurs when creating cGPU instance: " || fail "the reason lacks the cGPU prefix"
bundle /tmp/rt-b6 ALIYUN_COM_GPU_MEM_CONTAINER=lots
out=$(state ctr-h6 "$HPID" /tmp/rt-b6 creating | cgpuctl hook create-runtime 2>&1)
rc=$?
echo "$out"
[ "$rc" != 0 ] || fail "an unparsable slice was accepted"
for c in ctr-h5 ctr-h6; do
	ctl instance ls --container $c -o json
	assert_eq "[]" "$out" "instances after a failed hook ($c)"
done

echo "### poststop removes the slices, twice is fine"
for c in 1 2; do
	state ctr-h$c 0 /tmp/rt-b$c stopped | cgpuctl hook poststop || fail "poststop ctr-h$c"
	state ctr-h$c 0 /tmp/rt-b$c stopped | cgpuctl hook poststop || fail "second poststop ctr-h$c"
done
ctl inspect
echo "$out" | grep -q "^0/32 (0%)$" || fail "slices left after poststop"

echo "### daemon down: a no-slice container still starts, a slice does not"
stop_daemon
state ctr-h3 "$HPID" /tmp/rt-b3 creating | cgpuctl hook create-runtime || fail "no-slice hook needs the daemon"
out=$(state ctr-h1 "$HPID" /tmp/rt-b1 creating | cgpuctl hook create-runtime 2>&1)
rc=$?
echo "$out"
assert_eq 3 "$rc" "hook with the daemon down"
echo "$out" | grep -q "cgpud is not running" || fail "the hook does not say the daemon is down"
pass
