#!/bin/sh
# With cgpud not running, a container that asks for a slice does not start
# (the hook fails closed, saying the daemon is unreachable), while a
# container without one starts: its hook never dials the daemon.
# vm-timeout: 120
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

# A socket file may be left by an earlier test's killed daemon: that is the
# crashed-daemon case, connection refused.
! pidof cgpud >/dev/null || fail "a cgpud runs before the test: $(pidof cgpud)"
bundle want -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -- echo started
run_fg want
[ "$rc" != 0 ] || fail "a container with a slice started without cgpud"
echo "$out" | grep -q "cgpuctl: " || fail "no reason from the hook"
echo "$out" | grep -q "$SOCK" || fail "the reason does not name the socket"
echo "$out" | grep -q started && fail "the container's process ran"
assert_eq none "$(status want)" "the refused container's state"
assert_eq 0 "$(kernel_instances)" "kernel instances"

bundle plain -- echo started
run_fg plain
assert_eq 0 "$rc" "a container without a slice"
echo "$out" | grep -q "^started$" || fail "the container without a slice did not run"
pass
