#!/bin/sh
# Debian's containerd 1.6 (it predates CDI) with `ctr run --config`: an OCI
# spec that carries the cgpuctl hook. The runc v2 shim runs the hook, so
# containerd's containers get their slices from cgpud too: the limit, the
# meminfo, managed memory refused, a second slice on the same GPU isolated
# from the first, the whole card without a slice, nothing left after.
# Staged only with CGPU_CONTAINERD=1 (make containerd-vm-test): 83 MB.
# vm-timeout: 240
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null; then
	skip "containerd is staged only with CGPU_CONTAINERD=1 (make containerd-vm-test): it is 83 MB"
fi
start_daemon
start_containerd

# cr NAME [ctr run flags]: ctr run with bundle NAME's spec; output in $out,
# status in $rc.
cr() {
	_n=$1
	shift
	out=$(ctr run --no-pivot --config "$BUNDLES/$_n/config.json" "$@" "$_n" </dev/null 2>&1)
	rc=$?
	echo "\$ ctr run --config $_n/config.json $* $_n (rc=$rc)"
	echo "$out" | sed 's/^/  /'
}

echo "### ctr-a holds 3 GiB of its 4 GiB slice on GPU 0"
bundle ctr-a -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- fakecuda -q alloc 3G hold
cr ctr-a -d
assert_eq 0 "$rc" "ctr run -d ctr-a"
i=0
until cgpuctl instance ls -o json | grep -q "\"used\": *$((3 * GIB))"; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "ctr-a's 3 GiB never showed in its slice: $(cgpuctl inspect -d)"
	sleep 0.1
done

echo "### ctr-b, 4 GiB on GPU 0: its own 4 GiB, not a byte more; no managed memory"
bundle ctr-b -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- \
	sh -c 'fakecuda meminfo alloc 4G alloc 1; fakecuda managed 2M; cat /proc/self/cgroup'
cr ctr-b --rm
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) free=$((4 * GIB)) " || fail "ctr-b's meminfo is not its own 4 GiB"
echo "$out" | grep -q "^alloc 4G: OK " || fail "ctr-b could not take its 4 GiB"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "ctr-b went past its slice"
echo "$out" | grep -q "^managed 2M: CUDA_ERROR_NOT_SUPPORTED" || fail "managed memory was not refused"
echo "$out" | grep -q "^0::/cgpu-ctr/ctr-b$" || fail "ctr-b is not in the spec's cgroup"

echo "### ctr-c without a slice sees the whole card"
card=$(nvmock_counter gpu0/total_bytes)
bundle ctr-c -- fakecuda meminfo
cr ctr-c --rm
assert_eq 0 "$rc" "ctr run ctr-c"
echo "$out" | grep -q "^meminfo: total=$card " || fail "ctr-c does not see the whole card"

echo "### cgpuctl inspect -d while ctr-a runs"
d=$(cgpuctl inspect -d)
echo "$d"
echo "$d" | grep -Eq '^ctr-a +ctr-a +0 +4 +3 ' || fail "inspect -d: ctr-a's row"
assert_eq "ctr-a" "$(containers)" "instances while ctr-a runs"

echo "### a slice that cannot be made: ctr run fails with the cGPU reason"
bundle ctr-big -e ALIYUN_COM_GPU_MEM_CONTAINER=64 -- echo started
cr ctr-big --rm
[ "$rc" != 0 ] || fail "ctr-big started"
echo "$out" | grep -q "Error occurs when creating cGPU instance: no GPU has 64 GiB" || fail "no cGPU reason from ctr"

echo "### ctr-a stops; nothing is left"
ctr task kill -s KILL ctr-a || fail "ctr task kill"
i=0
while ctr task ls 2>/dev/null | grep -q '^ctr-a .*RUNNING'; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "ctr-a did not stop"
	sleep 0.1
done
ctr task rm ctr-a >/dev/null 2>&1 || fail "ctr task rm ctr-a"
ctr container rm ctr-a || fail "ctr container rm ctr-a"
ctr container rm ctr-big >/dev/null 2>&1
assert_clean "after the containerd containers"
pass
