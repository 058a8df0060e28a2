#!/bin/sh
# rmmod cgpu is refused while any instance exists, also a force-destroyed
# one whose memory is still held; destroy with memory held needs --force,
# and forced destroy keeps the accounting exact until the memory goes.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

reload() {
	module_loaded cgpu || insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko"
}
trap 'cleanup; reload' EXIT

instance t1 0 4M t_a
rmmod cgpu 2>/dev/null && fail "rmmod with an instance succeeded"
module_loaded cgpu || fail "cgpu went away"

hold_in t_a -q alloc 2M
adm_err EBUSY destroy t1
adm destroy t1 --force
assert_eq "" "$(cgpuadm list)" "the instance is gone from the list"
[ -e /proc/cgpu_km/0/t1 ] && fail "still in /proc"
assert_eq $((2 * MIB)) "$(nv_used 0)" "the memory is still there"
fc_in t_a 0 alloc 8M
rmmod cgpu 2>/dev/null && fail "rmmod with held memory of a destroyed instance"
kill_hold "$hold_pid"
expect_idle "after the holder went"

rmmod cgpu || fail "rmmod with no instance left"
reload
assert_eq "nvidia: nvmock" "$(head -1 /proc/cgpu_km/hooks)" "hooks after reload"
instance t2 0 1M t_a
fc_in t_a 2 alloc 1M alloc 64K
