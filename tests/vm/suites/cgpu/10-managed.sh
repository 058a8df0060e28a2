#!/bin/sh
# Managed memory (an mmap of the UVM fd) is refused inside and counted;
# semaphore pools and CUDA init keep working inside; outside it is allowed.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 1G t_a
before=$(nvmock_counter managed_ranges)
fc_in t_a 2 managed 2M
expect_line "^managed 2M: CUDA_ERROR_NOT_SUPPORTED (mmap: errno 1 "
assert_eq "$before" "$(nvmock_counter managed_ranges)" "no managed range made"
assert_eq 1 "$(stat_of t1 refused_managed)" "refusal counted"
fc_in t_a 0 sempool 2M sempool 4M alloc 1M
fc_in t_a 2 sempool 2M managed 2M
assert_eq 2 "$(stat_of t1 refused_managed)" "second refusal counted"
fc_in - 0 managed 2M
assert_eq $((before + 1)) "$(nvmock_counter managed_ranges)" "outside: one managed range"
expect_idle "at the end"
