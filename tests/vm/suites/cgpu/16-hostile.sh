#!/bin/sh
# Hostile input: every /dev/cgpu ioctl with short, long, garbage and
# unmapped buffers, non-zero reserved fields, absurd values, names without
# NUL, and no CAP_SYS_ADMIN (cgpuadm hostile); then the NVIDIA ABI's own
# hostile client (bad pointers, sizes, handles) run inside an instance, so
# every call goes through the hooks. Nothing leaks, nothing is charged.
# vm-timeout: 300
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

cgpuadm hostile >/tmp/hostile.out 2>&1
rc=$?
grep -v '^PASS' /tmp/hostile.out | tail -20
assert_eq 0 "$rc" "cgpuadm hostile"
assert_eq "" "$(cgpuadm list)" "no instance left behind"

instance t1 0 64M t_a
out=$(sh -c 'echo $$ >"$0/cgroup.procs" && exec nvhostile -q' "$CG/t_a" 2>&1)
rc=$?
echo "$out" | tail -20
echo "$out" | tail -1 | grep -Eq '^[0-9]+ passed, 0 failed$' ||
	fail "nvhostile inside an instance: $(echo "$out" | tail -1) (exit $rc)"
expect_idle "after nvhostile"
assert_eq 0 "$(stat_of t1 live)" "no live charge"
