#!/bin/sh
# 20 long-running containers with 256 MiB slices fill GPU 0's instance
# table; the 21st does not start: runc reports the hook's cGPU-prefixed
# reason, the 20 keep running, nothing is left of the 21st. When one of
# the 20 goes, the 21st starts.
# vm-timeout: 420
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
slice() {
	bundle "$1" -e ALIYUN_COM_GPU_MEM_CONTAINER=256 -e ALIYUN_COM_GPU_MEM_UNIT=MiB \
		-e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- sleep 600
}
n=1
while [ $n -le 20 ]; do
	slice "cap$n"
	run_bg "cap$n"
	assert_eq 0 "$rc" "runc run -d cap$n: $out"
	n=$((n + 1))
done
assert_eq 20 "$(runc list -q | wc -l)" "containers"
assert_eq 20 "$(kernel_instances)" "kernel instances"

slice cap21
run_bg cap21
echo "$out" | sed 's/^/  /'
[ "$rc" != 0 ] || fail "the 21st container started"
echo "$out" | grep -q "cgpuctl: Error occurs when creating cGPU instance: GPU 0 has 20 instances, the most a GPU takes" ||
	fail "runc did not report the hook's cGPU reason"
assert_eq none "$(status cap21)" "the 21st container's state"
n=1
while [ $n -le 20 ]; do
	assert_eq running "$(status "cap$n")" "cap$n after the refusal"
	n=$((n + 1))
done
assert_eq 20 "$(containers | wc -l)" "cgpud's instances after the refusal"
assert_eq 20 "$(kernel_instances)" "kernel instances after the refusal"
cgpuctl inspect -o json | grep -q "\"allocated\": *$((20 * 256 * MIB))" || fail "inspect -o json: GPU 0 should have 20 x 256 MiB allocated"

echo "### one goes, the 21st starts"
stop cap7
run_bg cap21
assert_eq 0 "$rc" "the 21st after one went: $out"
assert_eq running "$(status cap21)" "cap21"
assert_eq 20 "$(kernel_instances)" "kernel instances"
n=1
while [ $n -le 21 ]; do
	[ $n = 7 ] || stop "cap$n"
	n=$((n + 1))
done
assert_clean "after all stopped"
pass
