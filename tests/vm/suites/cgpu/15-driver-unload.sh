#!/bin/sh
# When the driver goes, the hooks go with it (nothing points into freed
# text); instances survive, and the hooks come back with the driver.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

restore() {
	cleanup
	module_loaded nvmock || insmod "$CGPU_MODULES/nvmock.ko"
}
trap restore EXIT

instance t1 0 1M t_a
fc_in t_a 2 alloc 1M alloc 64K
rmmod nvmock || fail "rmmod nvmock under cgpu"
assert_eq "nvidia: -
nvidia-uvm: -
armed: yes" "$(cat /proc/cgpu_km/hooks)" "hooks removed"
assert_eq 1 "$(cgpuadm list | grep -c '^id=')" "the instance survives"
insmod "$CGPU_MODULES/nvmock.ko" num_gpus=1 mem_mib=2048 || fail "insmod nvmock"
assert_eq "nvidia: nvmock
nvidia-uvm: nvmock
armed: yes" "$(cat /proc/cgpu_km/hooks)" "hooks back"
fc_in t_a 2 alloc 1M alloc 64K meminfo
assert_eq "$MIB" "$(val total '^meminfo')" "virtualised again"
fc_in - 0 meminfo
assert_eq $((2048 * MIB)) "$(val total '^meminfo')" "the new card outside"
rmmod nvmock || fail "rmmod nvmock again"
insmod "$CGPU_MODULES/nvmock.ko" || fail "insmod nvmock with defaults"
