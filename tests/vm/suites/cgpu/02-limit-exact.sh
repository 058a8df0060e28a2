#!/bin/sh
# The limit holds to the byte, with the driver's rounding (docs/nvidia-abi.md
# 10.11: 64 KiB pages below 2 MiB, 2 MiB pages from there): what fits is
# allowed, one byte more is refused with NV_ERR_NO_MEMORY and never reaches
# the driver; both RM_ALLOC forms and VID_HEAP_CONTROL are counted.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 1M t_a

echo "### 1 MiB in 64 KiB pages: 512K + 448K + 1 byte (= 64K) fits exactly"
hold_in t_a -q alloc 512K alloc 448K alloc 1
expect_used t1 "$MIB" "full"
assert_eq "$MIB" "$(nv_used 0)" "nvmock agrees"
fc_in t_a 2 alloc 1
expect_line "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY (status 0x51"
assert_eq "$MIB" "$(nv_used 0)" "the refused allocation never reached nvmock"
assert_eq 1 "$(stat_of t1 refused)" "refused counted"
kill_hold "$hold_pid"
expect_used t1 0 "after kill"

echo "### rounding: 100K is charged as 128K"
adm set t1 --mem 128K
fc_in t_a 0 alloc 100K
assert_eq 131072 "$(val size '^alloc 100K')" "actual size"
fc_in t_a 2 alloc 100K alloc 1
expect_line "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY"
adm set t1 --mem 131071
fc_in t_a 2 alloc 100K
expect_line "^alloc 100K: CUDA_ERROR_OUT_OF_MEMORY"

echo "### 2 MiB pages: 2M+1 takes 4 MiB"
adm set t1 --mem 4M
fc_in t_a 0 alloc 2097153
assert_eq 4194304 "$(val size '^alloc 2097153')" "actual size"
adm set t1 --mem 4194303
fc_in t_a 2 alloc 2097153
fc_in t_a 0 alloc 2M alloc 1984K
adm set t1 --mem 4M

echo "### NVOS21, auto handles, VID_HEAP_CONTROL"
fc_in t_a 2 --alloc-form nvos21 alloc 2M alloc 2M alloc 1
expect_line "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY"
fc_in t_a 2 --auto-handles alloc 2M alloc 2M alloc 1
expect_line "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY"
fc_in t_a 2 legacy-alloc 2M legacy-alloc 2M legacy-alloc 1
expect_line "^legacy-alloc 1: CUDA_ERROR_OUT_OF_MEMORY"
fc_in t_a 2 alloc 2M legacy-alloc 2M alloc 1
expect_line "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY"
fc_in t_a 2 alloc 0
expect_used t1 0 "at the end"
expect_idle "at the end"
