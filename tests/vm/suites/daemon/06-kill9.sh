#!/bin/sh
# kill -9 of the daemon in the middle of creates and of destroys, at
# different moments: each restart reconciles to a state in which the
# kernel's instances, the device-filter pins and the daemon's list agree,
# every instance is ready, and nothing is leaked.
# vm-timeout: 600
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

# consistent ROUND: daemon, kernel and pins agree.
consistent() {
	d=$(daemon_names)
	k=$(kernel_names)
	want=$(for n in $d; do echo "$n.0"; done)
	[ "$k" = "$want" ] || fail "round $1: kernel [$(echo "$k" | tr '\n' ' ')] but daemon [$(echo "$d" | tr '\n' ' ')]"
	api GET /v1/instances
	if echo "$body" | grep -q '"state":"creating"\|"state":"destroying"'; then
		fail "round $1: an instance is not settled after reconciliation: $body"
	fi
	assert_eq "$(echo "$d" | grep -c .)" "$(pins)" "round $1: filter pins"
	echo "round $1: $(echo "$d" | grep -c .) instances, consistent"
}

round=0
for delay in 0.02 0.1 0.3 0.6; do
	round=$((round + 1))
	start_daemon
	i=1
	while [ $i -le 6 ]; do
		mkdir -p "$CG/dt-k$round-$i"
		apicall -s "$SOCK" POST /v1/instances "{\"name\":\"k$round-$i\",\"container_id\":\"c$round-$i\",\"cgroup\":\"$CG/dt-k$round-$i\",\"memory\":$MIB,\"gpus\":[\"0\"]}" >/dev/null 2>&1 &
		i=$((i + 1))
	done
	sleep "$delay"
	kill -9 "$DPID"
	wait 2>/dev/null
	DPID=
	echo "round $round: killed during creates after ${delay}s"
	start_daemon
	consistent "$round (creates)"
	stop_daemon KILL
done

round=0
for delay in 0.02 0.1 0.3; do
	round=$((round + 1))
	start_daemon
	for n in $(daemon_names | head -4); do
		apicall -s "$SOCK" DELETE "/v1/instances/$n" >/dev/null 2>&1 &
	done
	sleep "$delay"
	kill -9 "$DPID"
	wait 2>/dev/null
	DPID=
	echo "destroy round $round: killed after ${delay}s"
	start_daemon
	consistent "$round (destroys)"
	stop_daemon KILL
done

echo "### the rest goes through the API, and nothing is left"
start_daemon
for n in $(daemon_names); do
	api DELETE "/v1/instances/$n"
	expect 204 "destroy $n"
done
assert_eq "" "$(kernel_names)" "kernel instances at the end"
assert_eq 0 "$(pins)" "pins at the end"
pass
