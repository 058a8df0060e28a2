#!/bin/sh
# fakecuda's own contract: exit 1 for usage errors, 2 for CUDA errors, size
# suffixes, -q, --auto-handles, and the driver's answers it passes through.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 --help
expect_line "^usage: fakecuda"
fc 1 bogus
expect_line 'unknown command "bogus"'
fc 1 alloc
expect_line "alloc: needs 1 argument"
fc 1 alloc 1X
expect_line 'alloc: bad size "1X"'
fc 1 --alloc-form nvos99 init
fc 1 free last
expect_line "free last: no such live handle"
expect_idle "after usage errors"

fc 0 alloc 65536 alloc 0x10000 alloc 64K alloc 64KiB alloc 1M alloc 1G
assert_eq 4 "$(echo "$out" | grep -c '^alloc [^ ]*: OK handle=0x[0-9a-f]* size=65536 ')" "64 KiB spelt four ways"
assert_eq 1048576 "$(val size '^alloc 1M:')" "1M"
assert_eq "$GIB" "$(val size '^alloc 1G:')" "1G"

# size 0 is the driver's to refuse [10.11]; exit 2 sticks after later OKs
fc 2 alloc 0 alloc 1M
expect_line "^alloc 0: CUDA_ERROR_INVALID_VALUE (status 0x1f NV_ERR_INVALID_ARGUMENT)$"
expect_line "^alloc 1M: OK"

# an unknown object in a valid client frees with NV_OK [10.3]
fc 0 free 0x1234
expect_line "^free 0x1234: OK$"

fc 0 -q alloc 64K
[ "$(echo "$out" | grep -c '^init:')" = 0 ] || fail "-q still prints the init line"

# driver-generated handles (tests/nvmock/README.md: 0xcaf00000 | n)
fc 0 --auto-handles alloc 1M dup last legacy-alloc 1M free all
for what in "alloc 1M" "dup 0x" "legacy-alloc 1M"; do
	h=$(val handle "^$what")
	case $h in
	0xcaf0*) ;;
	*) fail "$what: handle $h is not driver-generated" ;;
	esac
done
expect_line "^free all: OK freed=3$"
expect_idle "at the end"
