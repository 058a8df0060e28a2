#!/bin/sh
# The hooks are in only while something is attached or tracked: a node
# where no container has a slice runs the driver as without cgpu.  The
# first attachment arms them before it is visible; they come out (from a
# work item) once the last attachment and the last tracked object are gone.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

armed() { sed -n 's/^armed: //p' /proc/cgpu_km/hooks; }
# wait_armed STATE: within 10 s
wait_armed() {
	_i=0
	until [ "$(armed)" = "$1" ]; do
		_i=$((_i + 1))
		[ $_i -gt 100 ] && fail "armed: $(armed), want $1 within 10 s"
		sleep 0.1
	done
	echo "armed: $1"
}

wait_armed no
adm create t1 --gpu 0 --mem 4M
assert_eq no "$(armed)" "an instance alone arms nothing"
mkcg t_a
fc_in t_a 0 alloc 8M
adm attach t1 "$CG/t_a"
assert_eq yes "$(armed)" "armed by the first attachment"

echo "### detached while memory is held: armed until the holder goes"
hold_in t_a -q alloc 2M
adm detach t1 "$CG/t_a"
# An absence (no disarm while memory is tracked) has no event to wait for:
# the detach queues no disarm work when something is tracked, and this
# second is the time a wrongly queued one would have had to run.  The
# positive side below (disarmed once the holder goes) is waited for.
sleep 1
assert_eq yes "$(armed)" "still armed while the holder's memory is tracked"
expect_used t1 $((2 * MIB)) "charged"
kill_hold "$hold_pid"
wait_armed no
expect_used t1 0 "credited at exit"
fc_in t_a 0 alloc 8M meminfo
assert_eq $CARD "$(val total '^meminfo')" "disarmed: the card as it is"

echo "### armed again"
adm attach t1 "$CG/t_a"
assert_eq yes "$(armed)" "armed by the attachment"
fc_in t_a 2 alloc 2M alloc 4M
expect_line "^alloc 4M: CUDA_ERROR_OUT_OF_MEMORY"
adm destroy t1
wait_armed no
expect_idle "at the end"
