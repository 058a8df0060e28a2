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
now() { cut -d. -f1 /proc/uptime; }

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
		wait "$blk"
		[ $? -eq 77 ] && skip "$(cat /tmp/nvblock.out)"
		fail "nvblock ended: $(cat /tmp/nvblock.out)"
	fi
	_i=$((_i + 1))
	[ $_i -gt 300 ] && fail "nvblock did not block within 30 s"
	sleep 0.1
done
cat /tmp/nvblock.out
t0=$(now)

echo "### the last attachment goes while the call waits"
adm detach t1 "$CG/t_a"
adm destroy t1
sleep 2
assert_eq no "$(armed)" "the hooks came out"
cgpuadm list >/dev/null || fail "cgpuadm list"
echo "\$ cgpuadm list: answered"

echo "### a new attachment arms the hooks again at once"
instance t2 0 4M t_a
assert_eq yes "$(armed)" "armed again"
fc_in t_a 2 alloc 2M alloc 4M
expect_line "^alloc 4M: CUDA_ERROR_OUT_OF_MEMORY"
adm destroy t2
took=$(($(now) - t0))
echo "control requests done $took s after the call began to wait"
[ "$took" -lt 25 ] || fail "control requests took $took s: held up by the waiting call"

echo "### the call returns; the hooks stay out"
wait "$blk" || fail "nvblock: $(cat /tmp/nvblock.out)"
cat /tmp/nvblock.out
_i=0
until [ "$(armed)" = no ]; do
	_i=$((_i + 1))
	[ $_i -gt 100 ] && fail "armed: $(armed) 10 s after the call returned"
	sleep 0.1
done
echo "armed: no"
expect_idle "at the end"
