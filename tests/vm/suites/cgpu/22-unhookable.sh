#!/bin/sh
# Fail closed: with a driver loaded whose ioctl entry point cgpu cannot
# find (here cgpu looks for 535's fops function,
# nvidia_frontend_unlocked_ioctl, which nvmock, like the 545+ drivers, does
# not have), ATTACH is refused with ENXIO and
# /proc/cgpu_km/hooks says which module and symbol, so no cgroup ever looks
# limited while its calls pass unseen. nvmock's own counters show the
# allocations a task of that cgroup then makes are not limited: which is
# why nothing may be attached. Loaded with the right name again, attaching
# works and the limit holds.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

restore() {
	cleanup
	module_loaded cgpu && rmmod cgpu
	insmod "$CGPU_MODULES/cgpu.ko"
}
trap restore EXIT

rmmod cgpu || fail "rmmod cgpu"
insmod "$CGPU_MODULES/cgpu.ko" nv_ioctl_sym=nvidia_frontend_unlocked_ioctl || fail "insmod cgpu.ko nv_ioctl_sym=nvidia_frontend_unlocked_ioctl"
cat /proc/cgpu_km/hooks
assert_eq "nvidia: - (nvmock is loaded, nvidia_frontend_unlocked_ioctl cannot be hooked: attach refused)" \
	"$(head -1 /proc/cgpu_km/hooks)" "the broken target in /proc/cgpu_km/hooks"
adm create t1 --gpu 0 --mem 1M
mkcg t_a
adm_err ENXIO attach t1 "$CG/t_a"
assert_eq "armed: no" "$(tail -1 /proc/cgpu_km/hooks)" "hooks after the refused attach"
hold_in t_a alloc 2M
assert_eq $((2 * MIB)) "$(nv_used)" "nvmock's used bytes: the cgroup's 2M past the 1M instance, unseen"
kill_hold "$hold_pid"
adm destroy t1

echo "### the driver's own name again: attached, and limited"
rmmod cgpu || fail "rmmod cgpu"
insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko"
assert_eq "nvidia: nvmock" "$(head -1 /proc/cgpu_km/hooks)" "hooks with the right name"
instance t1 0 1M t_a
fc_in t_a 2 alloc 1M alloc 64K
expect_line "^alloc 64K: CUDA_ERROR_OUT_OF_MEMORY"
assert_eq 0 "$(nv_used)" "nvmock's used bytes after the limited client exited"
