#!/bin/sh
# Loading cgpu before the driver works: the hooks go in when nvmock comes.
# (The harness loads nvmock first, so the other order is every other test.)
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

restore() {
	cleanup
	module_loaded nvmock || insmod "$CGPU_MODULES/nvmock.ko"
	module_loaded cgpu || insmod "$CGPU_MODULES/cgpu.ko"
}
trap restore EXIT

rmmod cgpu || fail "rmmod cgpu"
rmmod nvmock || fail "rmmod nvmock"
insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko without nvmock"
assert_eq "nvidia: -
nvidia-uvm: -
armed: no" "$(cat /proc/cgpu_km/hooks)" "no hooks without the driver"
instance t1 0 1M t_a
insmod "$CGPU_MODULES/nvmock.ko" || fail "insmod nvmock.ko under cgpu"
assert_eq "nvidia: nvmock
nvidia-uvm: nvmock
armed: yes" "$(cat /proc/cgpu_km/hooks)" "hooks after nvmock came (armed by the attachment)"
fc_in t_a 2 alloc 1M alloc 64K managed 2M
expect_line "^alloc 64K: CUDA_ERROR_OUT_OF_MEMORY"
expect_line "^managed 2M: CUDA_ERROR_NOT_SUPPORTED"
fc_in - 0 alloc 2M
