#!/bin/sh
# A tenant's uid 0 against /proc/cgpu_km, which every container's procfs
# shows: as root with no capability (runc's default here), and as root with
# CAP_SYS_ADMIN, inside a 4 GiB slice, it can neither raise its own limit,
# shrink a neighbour's, nor cap the GPU's instances, and it cannot read a
# neighbour's meminfo; it reads its own, with its own pid numbers. Judged
# by the kernel's limits and by nvmock's own count of the memory the
# tenant then holds, not by what the writes answered. An admin on the host
# still writes and reads all of it.
# vm-timeout: 240
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

nv_used() { nvmock_counter gpu0/used_bytes; }
start_daemon
bundle victim -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 -- fakecuda alloc 1G hold
run_bg victim
assert_eq 0 "$rc" "runc run -d victim: $out"
wait_out victim holding
# The victim's instance is the only one: its /proc/cgpu_km directory.
vdir=$(for d in /proc/cgpu_km/0/*/; do [ -d "$d" ] && echo "${d%/}"; done)
if [ -z "$vdir" ] || [ "$(echo "$vdir" | wc -l)" != 1 ]; then
	fail "want one instance directory under /proc/cgpu_km/0, got: $vdir"
fi
vpid=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$BUNDLES/victim.out")
echo "victim: $vdir (pid $vpid in its namespace)"

# The attack, run inside the attacker's container: every write, then the
# reads, then as much memory as it can get, held.
# shellcheck disable=SC2016 # expanded in the container
attack='
held() { until grep -q "^holding" "$1"; do sleep 0.1; done; }
me=$(for d in /proc/cgpu_km/0/*/; do cat "$d/meminfo" >/dev/null 2>&1 && echo "$d"; done)
try() { if (echo "$2" >"$1") 2>/dev/null; then echo "write $1 $2: accepted"; else echo "write $1 $2: refused"; fi; }
try "$VDIR/memsize" 2147483648
try /proc/cgpu_km/0/max_inst 1
for d in /proc/cgpu_km/0/*/; do case "$d" in "$VDIR"/) ;; *) try "$d/memsize" 17179869184 ;; esac; done
if cat "$VDIR/meminfo" >/dev/null 2>&1; then echo "read victim meminfo: yes"; else echo "read victim meminfo: no"; fi
echo "own: $me"
fakecuda alloc 2G hold >/tmp/h1 2>&1 &
echo "self pid: $!"
held /tmp/h1
for d in $me; do sed "s/^/own meminfo: /" "$d/meminfo"; done
fakecuda alloc 1G alloc 1G alloc 1G hold >/tmp/h2 2>&1 &
held /tmp/h2
cat /tmp/h2
echo "attack done"
wait
'
for who in nocap sysadmin; do
	echo "### a tenant's root, $who"
	capopt=
	[ "$who" = sysadmin ] && capopt="--cap CAP_SYS_ADMIN"
	# shellcheck disable=SC2086 # capopt is one option or none
	bundle "atk-$who" $capopt -e ALIYUN_COM_GPU_MEM_CONTAINER=4 -e ALIYUN_COM_GPU_VISIBLE_DEVICES=0 \
		-e "VDIR=$vdir" -- sh -c "$attack"
	run_bg "atk-$who"
	assert_eq 0 "$rc" "runc run -d atk-$who: $out"
	wait_out "atk-$who" '^attack done'
	cat "$BUNDLES/atk-$who.out"
	o=$(cat "$BUNDLES/atk-$who.out")
	echo "$o" | grep -q ': accepted$' && fail "$who: a write to /proc/cgpu_km was accepted"
	[ "$(echo "$o" | grep -c ': refused$')" -ge 3 ] || fail "$who: not every write was tried"
	echo "$o" | grep -q '^read victim meminfo: no$' || fail "$who read the victim's meminfo"
	echo "$o" | grep -q '^own: /proc/cgpu_km/0/' || fail "$who could not read its own meminfo"
	spid=$(echo "$o" | sed -n 's/^self pid: //p')
	echo "$o" | grep -q "^own meminfo: PID: $spid Mem: $((2 * GIB))$" ||
		fail "$who's own meminfo does not name its holder by its own pid $spid"
	echo "$o" | grep -q "^own meminfo: PID: [0-9]* Mem: $GIB$" && fail "$who's meminfo shows the victim's process"
	echo "$o" | grep -q '^alloc 1G: CUDA_ERROR_OUT_OF_MEMORY' || fail "$who went past 4 GiB"
	assert_eq "$((4 * GIB))" "$(cat "$vdir/memsize")" "the victim's limit after $who"
	assert_eq 20 "$(cat /proc/cgpu_km/0/max_inst)" "max_inst after $who"
	for d in /proc/cgpu_km/0/*/; do
		assert_eq "$((4 * GIB))" "$(cat "$d/memsize")" "$d's limit after $who"
	done
	# nvmock's own count: the victim's 1 GiB and the attacker's 4 GiB.
	assert_eq "$((5 * GIB))" "$(nv_used)" "nvmock's used bytes with $who holding all it could get"
	stop "atk-$who"
done

echo "### an admin on the host reads every meminfo and writes the limits"
grep -q "^PID: [0-9]* Mem: $GIB$" "$vdir/meminfo" || fail "the host admin cannot read the victim's meminfo: $(cat "$vdir/meminfo")"
echo $((6 * GIB)) >"$vdir/memsize" || fail "the host admin cannot write memsize"
assert_eq "$((6 * GIB))" "$(cat "$vdir/memsize")" "memsize after the admin's write"
echo 19 >/proc/cgpu_km/0/max_inst || fail "the host admin cannot write max_inst"
echo 20 >/proc/cgpu_km/0/max_inst
stop victim
assert_clean "after the containers"
pass
