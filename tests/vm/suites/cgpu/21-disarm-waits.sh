#!/bin/sh
# When the last attachment goes, the hooks come out while a call the hooks
# redirected earlier may still be in the driver, for as long as the driver
# takes.  The disarm work waits for such calls without cgpu's locks: control
# requests and a new attachment are not held up by a slow driver call, and
# the hooks are out for good once it returns.  (nvblock's RM_ALLOC reads its
# argument from a userfaultfd page supplied 30 s later: a call that waits in
# cgpu's wrapper.)
# vm-timeout: 180
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

armed() { sed -n 's/^armed: //p' /proc/cgpu_km/hooks; }
disarmed() { [ "$(armed)" = no ]; }
# The call still waits in the driver: nvblock has not printed "returned".
still_blocked() {
	kill -0 "$blk" 2>/dev/null && ! grep -q '^returned' /tmp/nvblock.out
}

adm create t1 --gpu 0 --mem 4M
mkcg t_a
adm attach t1 "$CG/t_a"
assert_eq yes "$(armed)" "armed by the attachment"

nvblock 30 >/tmp/nvblock.out 2>&1 &
blk=$!
hold_pids="$hold_pids $blk"
_i=0
until grep -q '^blocked:' /tmp/nvblock.out; do
	if ! kill -0 "$blk" 2>/dev/null; then
		# Exit 77 is nvblock's "no userfaultfd". Debian's kernel has
		# it, so there it is a failure; the debug kernel is a defconfig
		# without CONFIG_USERFAULTFD (tests/vm/debug-config).
		wait "$blk"
		_rc=$?
		case $_rc:$(uname -r) in
		77:*-cgpu-debug) skip "the debug kernel has no userfaultfd (CONFIG_USERFAULTFD is not in tests/vm/debug-config): $(cat /tmp/nvblock.out)" ;;
		esac
		fail "nvblock ended (exit $_rc): $(cat /tmp/nvblock.out)"
	fi
	_i=$((_i + 1))
	[ $_i -gt 300 ] && fail "nvblock did not block within 30 s"
	sleep 0.1
done
cat /tmp/nvblock.out

echo "### the last attachment goes while the call waits"
adm detach t1 "$CG/t_a"
adm destroy t1
wait_for 20 disarmed
echo "armed: no"
still_blocked || fail "the hooks came out only after the call returned"
cgpuadm list >/dev/null || fail "cgpuadm list"
echo "\$ cgpuadm list: answered"

echo "### a new attachment arms the hooks again at once"
instance t2 0 4M t_a
assert_eq yes "$(armed)" "armed again"
fc_in t_a 2 alloc 2M alloc 4M
expect_line "^alloc 4M: CUDA_ERROR_OUT_OF_MEMORY"
adm destroy t2
# Not held up by the waiting call: all of it done while the call still
# waits (it waits 30 s), which is what a wall-clock bound on a loaded
# guest would only guess at.
still_blocked || fail "the control requests finished only after the call returned: held up by it"
echo "control requests done while the call still waits"

echo "### the call returns; the hooks stay out"
wait "$blk" || fail "nvblock: $(cat /tmp/nvblock.out)"
cat /tmp/nvblock.out
wait_for 10 disarmed
echo "armed: no"
expect_idle "at the end"
