#!/bin/sh
# A container whose cgroup goes loses its instance without any call: the
# daemon sees the cgroup removed (cgroup.events, else its sweep) and
# destroys the kernel instance and the device filter.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon --sweep-interval 2s
create g1 dt-g1 $((4 * MIB))
expect 201 "create g1"
create g2 dt-g2 $((4 * MIB))
expect 201 "create g2"
in_cg dt-g1 fakecuda alloc 2M
assert_eq 0 "$rc" "fakecuda in g1"
rmdir "$CG/dt-g1" || fail "rmdir the container cgroup"
i=0
while [ "$(daemon_names)" != "g2" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "g1 still listed 10 s after its cgroup went: $(daemon_names)"
	sleep 0.1
done
echo "g1 went after ~$((i * 100)) ms"
assert_eq "g2.0" "$(kernel_names)" "kernel instances"
assert_eq 1 "$(pins)" "filter pins"
grep -q "g1" "$LOG" || fail "nothing logged about g1"
pass
