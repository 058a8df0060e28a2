#!/bin/sh
# Charges follow the fd's owner, not the caller. A process in a 1 GiB slice
# hands its /dev/nvidiactl and /dev/nvidia0 fds and its RM client to a
# process outside any slice (SCM_RIGHTS); what that process allocates on
# them is the slice's: it gets the slice's 1 GiB and not a byte more,
# judged by nvmock's own used_bytes. The other way round, a client made
# outside and handed into the slice is charged to the slice that uses it.
# When every copy of the fds is closed, the ownership goes with them and
# the hooks come out.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

armed() { sed -n 's/^armed: //p' /proc/cgpu_km/hooks; }
disarmed() { [ "$(armed)" = no ]; }
holding() { grep -q '^holding' "$1"; }

instance t1 0 1G t_a

echo "### a slice's fds handed to a process outside any slice"
fakecuda take /tmp/fd1.sock rm-alloc 512M rm-alloc 512M rm-alloc 512M hold >/tmp/taker1.out 2>&1 &
taker=$!
hold_pids="$hold_pids $taker"
hold_in t_a give /tmp/fd1.sock
giver=$hold_pid
wait_for 60 holding /tmp/taker1.out
sed 's/^/  taker: /' /tmp/taker1.out
grep -q '^take: OK' /tmp/taker1.out || fail "the outside process did not take the fds"
grep -q '^rm-alloc 512M: CUDA_ERROR_OUT_OF_MEMORY' /tmp/taker1.out || fail "the outside process went past the slice"
[ "$(grep -c '^rm-alloc 512M: OK' /tmp/taker1.out)" = 2 ] || fail "the slice's 1 GiB was not there for the taker"
assert_eq "$GIB" "$(nv_used)" "nvmock's used bytes with the taker holding all it could get"
expect_used t1 "$GIB" "charged to the slice"
kill_hold "$giver"
assert_eq "$GIB" "$(nv_used)" "the taker's memory outlives the giver"
expect_used t1 "$GIB" "still the slice's after the giver went"
kill_hold "$taker"
assert_eq 0 "$(nv_used)" "nvmock's used bytes after both went"
expect_used t1 0 "credited when the last copy of the fds closed"

echo "### a client made outside, handed into the slice"
fakecuda give /tmp/fd2.sock hold >/tmp/giver2.out 2>&1 &
giver=$!
hold_pids="$hold_pids $giver"
hold_in t_a take /tmp/fd2.sock rm-alloc 512M rm-alloc 512M rm-alloc 512M
taker=$hold_pid
wait_for 60 holding /tmp/giver2.out
grep -q '^rm-alloc 512M: CUDA_ERROR_OUT_OF_MEMORY' "$hold_out" || fail "the slice's process went past the slice on a client made outside"
[ "$(grep -c '^rm-alloc 512M: OK' "$hold_out")" = 2 ] || fail "the slice's 1 GiB was not there on a client made outside"
assert_eq "$GIB" "$(nv_used)" "nvmock's used bytes: the slice's 1 GiB"
expect_used t1 "$GIB" "charged to the slice that used the client"
kill_hold "$taker"
kill_hold "$giver"
expect_idle "after both went"

echo "### no ownership outlives the fds: the hooks come out"
adm destroy t1
wait_for 20 disarmed
echo "armed: no"
