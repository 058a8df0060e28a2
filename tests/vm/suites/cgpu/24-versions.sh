#!/bin/sh
# One slice on each driver branch's layouts (nvmock's version parameter,
# which its module version follows): the memory info the container sees is
# the slice's (FB_GET_INFO_V2 is 436, 444, 460 or 1028 B by branch), the
# limit holds, UVM's hold on unmapped memory is seen (its parameters grew
# in 550.40.53, not at a branch), managed memory is refused and semaphore
# pools work; each judged by nvmock's own counters. cgpu learns the version
# from the module, with nvmock loaded before it (sysfs) and after it (the
# module notifier), never from what a client reads back.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

trap 'cleanup; reload_nvmock' EXIT

agree() { # WHAT BYTES
	expect_used t1 "$2" "$1"
	assert_eq "$2" "$(nv_used 0)" "$1: nvmock used"
}

slice_checks() { # VERSION
	instance t1 0 64M t_a
	fc_in t_a 2 meminfo alloc 64M alloc 64K
	assert_eq $((64 * MIB)) "$(val total '^meminfo')" "$1: the card seen in the slice"
	expect_line "^alloc 64K: CUDA_ERROR_OUT_OF_MEMORY"
	hold_in t_a -q alloc 8M rm-free last
	agree "$1: RM handle freed, still mapped by UVM" $((8 * MIB))
	kill_hold "$hold_pid"
	agree "$1: after kill -9" 0
	before=$(nvmock_counter managed_ranges)
	fc_in t_a 2 sempool 2M managed 2M
	expect_line "^managed 2M: CUDA_ERROR_NOT_SUPPORTED"
	expect_line "^sempool 2M: OK"
	assert_eq "$before" "$(nvmock_counter managed_ranges)" "$1: no managed range made"
	adm destroy t1
	expect_idle "$1: at the end"
}

for v in 535.261.03 545.29.06 550.40.07 550.40.53 550.163.01 560.35.03 570.195.03 580.65.06 595.45.04; do
	echo "### nvmock $v, loaded before cgpu"
	reload_nvmock version="$v"
	assert_eq "$v" "$(cat /sys/module/nvmock/version)" "nvmock's module version"
	slice_checks "$v (before)"
done

for v in 550.163.01 570.195.03; do
	echo "### nvmock $v, loaded after cgpu"
	rmmod cgpu || fail "rmmod cgpu"
	rmmod nvmock || fail "rmmod nvmock"
	insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko"
	insmod "$CGPU_MODULES/nvmock.ko" version="$v" || fail "insmod nvmock.ko version=$v"
	slice_checks "$v (after)"
done
