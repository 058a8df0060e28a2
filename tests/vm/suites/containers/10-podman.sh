#!/bin/sh
# Debian's podman 4.3 with `--rootfs` and the CDI device cgpu.io/gpu=0 from
# the spec `cgpuctl setup` writes (its createRuntime/poststop hooks and the
# NVIDIA nodes): the limit, the meminfo, managed memory refused, a second
# slice on the same GPU isolated from the first, the whole card without a
# slice, nothing left after. Staged only with CGPU_PODMAN=1
# (make podman-vm-test): about 43 MB.
# vm-timeout: 300
# CDI hooks name no socket: cgpud serves on the default one.
SOCK=/run/cgpu/cgpud.sock
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

if ! command -v podman >/dev/null || ! command -v conmon >/dev/null; then
	skip "podman is staged only with CGPU_PODMAN=1 (make podman-vm-test): it is about 43 MB"
fi
mkdir -p /var/tmp /run/libpod /etc/cdi
start_daemon
cgpuctl setup --no-hooks-file --hook-binary "$(command -v cgpuctl)" || fail "cgpuctl setup"
ROOTFS=/opt/cgpu/ctr/rootfs

# pm [podman run flags] -- CMD...: podman run with no network and the test
# rootfs (--rootfs makes the first argument a rootfs path, so the flags go
# before it); output in $out, status in $rc. The flags hold no spaces.
pm() {
	_f=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		_f="$_f $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # the flags, split on purpose
	out=$(podman run --network none $_f --rootfs "$ROOTFS" "$@" </dev/null 2>&1)
	rc=$?
	echo "\$ podman run$_f --rootfs $ROOTFS $* (rc=$rc)"
	echo "$out" | sed 's/^/  /'
}

echo "### pm-a holds 3 GiB of its 4 GiB slice on GPU 0"
pm -d --name pm-a --device cgpu.io/gpu=0 -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -- fakecuda -q alloc 3G hold
assert_eq 0 "$rc" "podman run -d pm-a"
i=0
until cgpuctl instance ls -o json | grep -q "\"used\": *$((3 * GIB))"; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "pm-a's 3 GiB never showed in its slice: $(cgpuctl inspect -d)"
	sleep 0.1
done

echo "### pm-b, 4 GiB on GPU 0: its own 4 GiB, not a byte more; no managed memory"
pm --rm --name pm-b --device cgpu.io/gpu=0 -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -- \
	sh -c 'fakecuda meminfo alloc 4G alloc 1; fakecuda managed 2M; ls /dev'
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) free=$((4 * GIB)) " || fail "pm-b's meminfo is not its own 4 GiB"
echo "$out" | grep -q "^alloc 4G: OK " || fail "pm-b could not take its 4 GiB"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "pm-b went past its slice"
echo "$out" | grep -q "^managed 2M: CUDA_ERROR_NOT_SUPPORTED" || fail "managed memory was not refused"
echo "$out" | grep -q "^nvidia1$" && fail "the CDI device for GPU 0 gave pm-b GPU 1's node"

echo "### pm-c, the same CDI device without a slice, sees the whole card"
card=$(nvmock_counter gpu0/total_bytes)
pm --rm --name pm-c --device cgpu.io/gpu=0 -- fakecuda meminfo
assert_eq 0 "$rc" "podman run pm-c"
echo "$out" | grep -q "^meminfo: total=$card " || fail "pm-c does not see the whole card"

echo "### cgpuctl inspect -d while pm-a runs"
d=$(cgpuctl inspect -d)
echo "$d"
assert_eq 1 "$(containers | wc -l)" "instances while pm-a runs"
echo "$d" | grep -Eq ' +0 +4 +3 ' || fail "inspect -d: pm-a's row"

echo "### a slice that cannot be made: podman run fails with the cGPU reason"
pm --rm --name pm-big --device cgpu.io/gpu=0 -e ALIYUN_COM_GPU_MEM_CONTAINER=64 -- echo started
[ "$rc" != 0 ] || fail "pm-big started"
echo "$out" | grep -q "Error occurs when creating cGPU instance: .*64 GiB" || fail "no cGPU reason from podman"

echo "### pm-a goes; nothing is left"
podman rm -f -t 0 pm-a || fail "podman rm -f pm-a"
podman rm -f -t 0 pm-big >/dev/null 2>&1
assert_clean "after the podman containers"
pass
