#!/bin/sh
# Filling a card stops at exactly its size with CUDA_ERROR_OUT_OF_MEMORY,
# on both GPUs and both allocation paths; freeing returns everything.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

reload_nvmock mem_mib=100,32
C0=$((100 * MIB))
C1=$((32 * MIB))

# 64 MiB, then 32 MiB, then 4 MiB fit; every other halving step gets OOM.
fc 0 fill
expect_line "^fill: OK total=$C0 allocs=3$"
expect_idle "after fill exited"

fc 0 -g 1 fill
expect_line "^fill: OK total=$C1 allocs=1$"
expect_idle "after fill of GPU 1 exited"

fc 2 fill alloc 64K meminfo free all meminfo
expect_line "^alloc 64K: CUDA_ERROR_OUT_OF_MEMORY (status 0x51 NV_ERR_NO_MEMORY)$"
assert_eq "$C0" "$(nth_val 1 total '^meminfo:')" "total of a full card"
assert_eq 0 "$(nth_val 1 free '^meminfo:')" "free of a full card"
assert_eq "$C0" "$(nth_val 2 free '^meminfo:')" "free after free all"

fc 2 legacy-alloc 100M legacy-alloc 64K
expect_line "^legacy-alloc 100M: OK handle=0x[0-9a-f]* size=$C0$"
expect_line "^legacy-alloc 64K: CUDA_ERROR_OUT_OF_MEMORY (status 0x51 NV_ERR_NO_MEMORY)$"
fc 2 alloc 101M
expect_line "^alloc 101M: CUDA_ERROR_OUT_OF_MEMORY"
expect_idle "after the OOM runs"

start_hold -q fill
expect_counters "holding a full GPU 0" 1 0 $C0 3 1 0 0
# Another process gets OOM at the smallest page, and succeeds on GPU 1.
fc 2 -q alloc 64K
fc 0 -q -g 1 alloc 32M
stop_hold
expect_idle "after kill -9 of the full card's holder"

reload_nvmock
expect_idle "after reload"
