#!/bin/sh
# Managed memory (cudaMallocManaged: an mmap of the UVM fd) is refused in a
# container with a slice, while a container without one, same runtime, same
# hook, same devices, gets its managed range: the refusal is the slice's.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
before=$(nvmock_counter managed_ranges)
bundle mgd -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -- fakecuda alloc 1M managed 2M
run_fg mgd
assert_eq 2 "$rc" "fakecuda's exit in the slice (2: a CUDA error)"
echo "$out" | grep -q "^alloc 1M: OK " || fail "a plain allocation in the slice was refused"
echo "$out" | grep -q "^managed 2M: CUDA_ERROR_NOT_SUPPORTED (mmap: errno 1 " || fail "managed memory was not refused in the slice"
assert_eq "$before" "$(nvmock_counter managed_ranges)" "managed ranges after the refusal"

bundle free -- fakecuda managed 2M
run_fg free
assert_eq 0 "$rc" "fakecuda's exit without a slice"
echo "$out" | grep -q "^managed 2M: OK" || fail "managed memory was refused without a slice"
assert_eq $((before + 1)) "$(nvmock_counter managed_ranges)" "managed ranges without a slice"
assert_clean "after both containers exited"
pass
