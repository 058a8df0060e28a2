#!/bin/sh
# fakecuda bench prints a table and then one "bench: NAME VALUE UNIT" line
# per figure (what `make bench` collects), and leaves nothing allocated.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

fc 0 -q bench 2000
n=0
for name in nvmock_alloc_free_median nvmock_control_median \
	nvmock_passthru_median baseline_syscall_median \
	nvmock_alloc_free_vs_syscall nvmock_control_vs_syscall \
	nvmock_passthru_vs_syscall; do
	line=$(echo "$out" | grep "^bench: $name ")
	echo "$line" | grep -Eq "^bench: $name [0-9]+(\.[0-9]+)? (ns|ratio)$" ||
		fail "no well-formed '$name' figure: '$line'"
	v=$(echo "$line" | cut -d' ' -f3)
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "$name is $v"
	n=$((n + 1))
done
assert_eq 7 "$(echo "$out" | grep -c '^bench: ')" "bench: lines (figures only)"
expect_idle "after bench"
