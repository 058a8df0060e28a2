#!/bin/sh
# Hostile input against every escape and UVM command (nvhostile): the
# documented errors where docs/nvidia-abi.md gives them, an error elsewhere, no
# crash; the harness checks the kernel log. Nothing may leak.
# vm-timeout: 900
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

for g in 0 1; do
	nvhostile -g $g -q >/tmp/nvhostile.out 2>&1
	rc=$?
	cat /tmp/nvhostile.out
	summary=$(tail -1 /tmp/nvhostile.out)
	echo "$summary" | grep -Eq '^[0-9]+ passed, 0 failed$' ||
		fail "nvhostile -g $g: $summary (exit $rc)"
	assert_eq 0 "$rc" "nvhostile -g $g exit status"
	expect_idle "after nvhostile -g $g"
done

# The 535 layouts get the same treatment.
reload_nvmock version=535.104.05
nvhostile -q -n 100 >/tmp/nvhostile.out 2>&1
rc=$?
cat /tmp/nvhostile.out
tail -1 /tmp/nvhostile.out | grep -Eq '^[0-9]+ passed, 0 failed$' ||
	fail "nvhostile under 535.104.05: $(tail -1 /tmp/nvhostile.out)"
assert_eq 0 "$rc" "nvhostile under 535 exit status"
expect_idle "after nvhostile under 535"
reload_nvmock
