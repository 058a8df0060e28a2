#!/bin/sh
# A container without ALIYUN_COM_GPU_MEM_CONTAINER (the hook is configured
# all the same) sees the whole mock card, allocates past any slice, and no
# instance is made for it; ALIYUN_COM_GPU_MEM_CONTAINER=0 and CGPU_DISABLE=1
# are the same.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

card=$(nvmock_counter gpu0/total_bytes)
start_daemon
for c in "plain" "zero -e ALIYUN_COM_GPU_MEM_CONTAINER=0" "off -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e CGPU_DISABLE=1"; do
	# shellcheck disable=SC2086 # a name and options
	set -- $c
	name=$1
	shift
	bundle "$name" "$@" -- sh -c 'fakecuda meminfo alloc 8G alloc 6G; echo "fakecuda=$?"; cat /proc/self/cgroup; exec sleep 60'
	run_bg "$name"
	assert_eq 0 "$rc" "runc run -d $name: $out"
	wait_out "$name" '^0::'
	sed 's/^/  /' "$BUNDLES/$name.out"
	grep -q "^meminfo: total=$card free=$card " "$BUNDLES/$name.out" || fail "$name: meminfo is not the whole card"
	grep -q "^alloc 8G: OK " "$BUNDLES/$name.out" || fail "$name: 8G refused"
	grep -q "^alloc 6G: OK " "$BUNDLES/$name.out" || fail "$name: 14 GiB in all refused"
	grep -q "^0::/cgpu-ctr/$name$" "$BUNDLES/$name.out" || fail "$name: not in its own cgroup"
	assert_eq running "$(status "$name")" "$name: status"
	assert_eq "" "$(containers)" "$name: instances while it runs"
	stop "$name"
done
assert_clean "at the end"
pass
