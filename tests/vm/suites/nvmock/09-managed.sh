#!/bin/sh
# cudaMallocManaged is an mmap of the UVM fd at offset == address: it makes
# a managed range (counted) and is not charged to the frame buffer; a
# semaphore pool's matching mmap is not a managed range (docs/nvidia-abi.md 7).
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

m0=$(nvmock_counter managed_ranges)
assert_eq 0 "$(nvmock_counter live_managed_ranges)" "live managed ranges at start"

fc 0 managed 2M
expect_line "^managed 2M: OK addr=0x[0-9a-f]* pages=512$"
assert_eq "$((m0 + 1))" "$(nvmock_counter managed_ranges)" "managed_ranges after one managed mmap"
assert_eq 0 "$(nvmock_counter live_managed_ranges)" "live managed ranges after exit"

fc 0 sempool 2M
expect_line "^sempool 2M: OK addr=0x"
assert_eq "$((m0 + 1))" "$(nvmock_counter managed_ranges)" "managed_ranges after a semaphore pool"

fc 0 sempool 2M managed 2M sempool 4M managed 64K
assert_eq "$((m0 + 3))" "$(nvmock_counter managed_ranges)" "managed_ranges after 2 more managed, 2 pools"

start_hold managed 4M managed 2M sempool 2M
assert_eq "$((m0 + 5))" "$(nvmock_counter managed_ranges)" "managed_ranges while holding"
assert_eq 2 "$(nvmock_counter live_managed_ranges)" "live managed ranges while holding"
expect_counters "managed memory is not frame buffer" 1 0 0 0
stop_hold
assert_eq 0 "$(nvmock_counter live_managed_ranges)" "live managed ranges after kill -9"

# fork with a managed range, a semaphore pool and an external mapping in
# the parent: the children inherit the vmas, make their own contexts.
m1=$(nvmock_counter managed_ranges)
fc 0 managed 2M sempool 2M alloc 1M children 2 managed 2M alloc 1M
expect_line "^children 2: ok=2 cuda_errors=0 failed=0$"
assert_eq $((m1 + 3)) "$(nvmock_counter managed_ranges)" "managed_ranges after parent + 2 children"
assert_eq 0 "$(nvmock_counter live_managed_ranges)" "live managed ranges after the fork test"
expect_idle "at the end"
