#!/bin/sh
# The UVM mapping holds memory on its own (docs/nvidia-abi.md 4): RM_FREE of a
# mapped allocation leaves it charged until UVM_FREE or the UVM fd's
# close, and UVM_FREE alone leaves the RM handle charged.  Escapes sent
# wrapped in NV_ESC_IOCTL_XFER_CMD are admitted, credited and virtualised
# exactly as plain ones.  cgpu and nvmock agree at every step.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 64M t_a

agree() { # WHAT BYTES
	expect_used t1 "$2" "$1"
	assert_eq "$2" "$(nv_used 0)" "$1: nvmock used"
}

echo "### rm-free: the mapping keeps the charge"
hold_in t_a -q alloc 8M rm-free last
agree "RM handle freed, still mapped" $((8 * MIB))
kill_hold "$hold_pid"
agree "after kill -9" 0
hold_in t_a -q alloc 8M rm-free last uvm-free last
agree "RM handle freed, then unmapped" 0
kill_hold "$hold_pid"
hold_in t_a -q alloc 8M alloc 4M rm-free last uvm-free last
agree "one of two freed both ways" $((8 * MIB))
kill_hold "$hold_pid"
agree "after kill -9" 0

echo "### uvm-free: the RM handle keeps the charge"
hold_in t_a -q alloc 8M uvm-free last
agree "unmapped, RM handle alive" $((8 * MIB))
kill_hold "$hold_pid"
hold_in t_a -q alloc 8M uvm-free last free last
agree "unmapped, then RM_FREE" 0
kill_hold "$hold_pid"
agree "after kill -9" 0

echo "### XFER_CMD: same limit, same credits, same view"
fc_in t_a 2 -q --xfer alloc 48M alloc 32M
expect_line "alloc 32M: CUDA_ERROR_OUT_OF_MEMORY"
agree "after exit" 0
hold_in t_a -q --xfer alloc 48M alloc 8M free last
agree "XFER RM_FREE credited" $((48 * MIB))
assert_eq 1 "$(stat_of t1 live)" "one live charge"
kill_hold "$hold_pid"
fc_in t_a 0 --xfer alloc 16M meminfo
assert_eq $((64 * MIB)) "$(val total meminfo:)" "meminfo total through XFER"
assert_eq $((48 * MIB)) "$(val free meminfo:)" "meminfo free through XFER"
fc_in t_a 0 --xfer alloc 8M dup last rm-free last free last
agree "XFER dup and frees" 0

echo "### a pass-through control answers the same inside and outside"
fc_in - 0 -q gpu-ids
outside=$(val ids gpu-ids:)
fc_in t_a 0 -q gpu-ids
assert_eq "$outside" "$(val ids gpu-ids:)" "GPU_GET_ATTACHED_IDS inside"
fc_in t_a 0 -q --xfer gpu-ids
assert_eq "$outside" "$(val ids gpu-ids:)" "GPU_GET_ATTACHED_IDS through XFER"
[ -n "$outside" ] && [ "$outside" != - ] || fail "no gpu id listed"
expect_idle "end"
