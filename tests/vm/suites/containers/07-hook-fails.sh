#!/bin/sh
# A container whose createRuntime hooks fail does not start and leaves no
# instance behind: a slice that cannot be made (more than the card), a
# value the hook cannot read (fail closed, cgpud never asked), and a slice
# made by cgpuctl's hook followed by another hook that fails (runc tears
# the container down and the poststop hook takes the slice back).
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
# refused NAME REASON: the container NAME did not start, runc said REASON,
# nothing of it is left.
refused() {
	[ "$rc" != 0 ] || fail "$1 started"
	echo "$out" | grep -q "$2" || fail "$1: runc did not report '$2'"
	assert_eq none "$(status "$1")" "$1's state"
	assert_eq "" "$(containers)" "$1: cgpud's instances"
	assert_eq 0 "$(kernel_instances)" "$1: kernel instances"
	[ ! -d "$CG/cgpu-ctr/$1" ] || fail "$1: its cgroup is left"
}

echo "### a slice larger than any GPU"
bundle big -e ALIYUN_COM_GPU_MEM_CONTAINER=64 -- echo started
run_fg big
refused big "cgpuctl: Error occurs when creating cGPU instance: no GPU has 64 GiB"
echo "$out" | grep -q started && fail "big ran its process"

echo "### a value the hook cannot read"
bundle bad -e ALIYUN_COM_GPU_MEM_CONTAINER=4x -- echo started
run_fg bad
refused bad "cgpuctl: Error occurs when creating cGPU instance: ALIYUN_COM_GPU_MEM_CONTAINER=.*4x.*: want a whole number"
echo "$out" | grep -q started && fail "bad ran its process"

echo "### cgpuctl's hook made the slice, the next hook fails"
bundle later -e ALIYUN_COM_GPU_MEM_CONTAINER=4 --then-hook 'echo "the next hook fails" >&2; exit 3' -- echo started
run_fg later
refused later "the next hook fails"
echo "$out" | grep -q started && fail "later ran its process"
grep -q 'instance created.*container=later' "$LOG" || fail "cgpud never made later's slice: the case tested nothing"
grep -q 'instance destroyed.*instance=later' "$LOG" || fail "later's slice was not destroyed by poststop"

echo "### and the next container with a slice starts as usual"
bundle ok -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -- fakecuda meminfo
run_fg ok
assert_eq 0 "$rc" "runc run ok"
echo "$out" | grep -q "^meminfo: total=$((4 * GIB)) " || fail "ok: meminfo is not 4 GiB"
assert_clean "at the end"
pass
