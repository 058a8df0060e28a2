#!/bin/sh
# However a container with a slice ends, its instance goes with it: a
# foreground `runc run` that exits, a detached one that exits and is
# deleted, one killed while it holds GPU memory, one removed with
# `runc delete -f` while it runs. Afterwards `cgpuctl inspect` shows
# nothing allocated, cgpu.ko has no instance and the mock card is idle.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
bundle fg -e ALIYUN_COM_GPU_MEM_CONTAINER=2 -- fakecuda alloc 1G
run_fg fg
assert_eq 0 "$rc" "runc run fg"
assert_eq "" "$(containers)" "instances after a foreground run"

bundle exits -e ALIYUN_COM_GPU_MEM_CONTAINER=2 -- fakecuda alloc 1G
bundle killed -e ALIYUN_COM_GPU_MEM_CONTAINER=3 -- fakecuda alloc 2G hold
bundle forced -e ALIYUN_COM_GPU_MEM_CONTAINER=1 -- fakecuda alloc 512M hold
for c in exits killed forced; do
	run_bg $c
	assert_eq 0 "$rc" "runc run -d $c: $out"
done
wait_out killed holding
wait_out forced holding
assert_eq "exits
forced
killed" "$(containers)" "instances while they exist"
echo "### cgpuctl inspect while they exist"
i=$(cgpuctl inspect) || fail "inspect: $i"
echo "$i"
echo "$i" | grep -Eq '^[^ ]+ +[^ ]+ +6/16 ' || fail "GPU 0 should show 6/16 GiB allocated"
used=$(nvmock_counter gpu0/used_bytes)
[ "$used" -ge $((2 * GIB + 512 * MIB)) ] || fail "the mock card holds $used bytes, want at least 2.5 GiB"

i=0
while [ "$(status exits)" = running ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "container exits did not exit"
	sleep 0.1
done
runc delete exits || fail "runc delete exits"
stop killed
runc delete -f forced || fail "runc delete -f forced"
assert_eq "" "$(runc list -q)" "runc's containers"
echo "### cgpuctl inspect after they are gone"
cgpuctl inspect
assert_clean "after every container ended"
assert_eq 0 "$(nvmock_counter gpu0/used_bytes)" "bytes the mock card holds"
pass
