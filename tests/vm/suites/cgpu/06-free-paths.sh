#!/bin/sh
# Every way memory goes back is credited exactly once (docs/nvidia-abi.md 4,
# 10.1, 10.3): RM_FREE of the memory, of its device, of its client, the fd
# closed by exit, kill -9, VID_HEAP_CONTROL FREE, and duplicated handles,
# which share one charge. cgpu and nvmock agree at every step.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 64M t_a
BYTES=$((12 * MIB)) # 8M + 3M rounded to 4M

agree() { # WHAT BYTES
	expect_used t1 "$2" "$1"
	assert_eq "$2" "$(nv_used 0)" "$1: nvmock used"
}

echo "### kill -9"
hold_in t_a -q alloc 8M alloc 3M
agree "holding" $BYTES
kill_hold "$hold_pid"
agree "after kill -9" 0

echo "### exit without freeing"
fc_in t_a 0 -q alloc 8M alloc 3M
agree "after exit" 0

echo "### free last, free all (fds open)"
hold_in t_a -q alloc 8M alloc 3M free last
agree "after free last" $((8 * MIB))
kill_hold "$hold_pid"
hold_in t_a -q alloc 8M alloc 3M free all
agree "after free all" 0
kill_hold "$hold_pid"

echo "### free-device, free-client"
hold_in t_a -q alloc 8M alloc 3M free-device
agree "after free-device" 0
kill_hold "$hold_pid"
hold_in t_a -q alloc 8M alloc 3M free-client
agree "after free-client" 0
kill_hold "$hold_pid"

echo "### VID_HEAP_CONTROL FREE"
hold_in t_a -q legacy-alloc 8M legacy-alloc 3M legacy-free last
agree "after legacy-free" $((8 * MIB))
kill_hold "$hold_pid"
agree "after kill" 0

echo "### dup: one charge, gone with the last handle"
hold_in t_a -q alloc 8M dup last
agree "original and dup" $((8 * MIB))
assert_eq 1 "$(stat_of t1 live)" "one live charge"
kill_hold "$hold_pid"
hold_in t_a -q --auto-handles alloc 8M dup last free 0xcaf00000
agree "dup alive, original freed" $((8 * MIB))
kill_hold "$hold_pid"
agree "after kill" 0
fc_in t_a 0 -q alloc 8M dup last free last free last
agree "both handles freed" 0

echo "### the same handle reused after a free"
fc_in t_a 0 -q alloc 8M free last alloc 8M free last alloc 2M
agree "after reuse" 0
assert_eq 0 "$(stat_of t1 live)" "no live charge"
expect_idle "at the end"
