#!/bin/sh
# kill -9 of the daemon in the middle of creates and of destroys, at
# different moments: three clients keep creating (or destroying) one
# instance after another, and the kill comes the moment the kernel holds
# (or has lost) a given number of instances, so it lands with requests
# inside the daemon (a kernel instance exists before its create is done). Each restart reconciles to a state in which the kernel's
# instances, the device-filter pins and the daemon's list agree, every
# instance is ready, and nothing is leaked.
# vm-timeout: 600
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

# consistent WHAT: daemon, kernel and pins agree.
consistent() {
	d=$(daemon_names)
	k=$(kernel_names)
	want=$(for n in $d; do echo "$n.0"; done)
	[ "$k" = "$want" ] || fail "$1: kernel [$(echo "$k" | tr '\n' ' ')] but daemon [$(echo "$d" | tr '\n' ' ')]"
	api GET /v1/instances
	if echo "$body" | grep -q '"state":"creating"\|"state":"destroying"'; then
		fail "$1: an instance is not settled after reconciliation: $body"
	fi
	assert_eq "$(echo "$d" | grep -c .)" "$(pins)" "$1: filter pins"
	echo "$1: $(echo "$d" | grep -c .) instances, consistent"
}

# restart WHAT: start the daemon again and show what reconciliation did.
restart() {
	_from=$(wc -l <"$LOG")
	start_daemon
	sed -n "$((_from + 1)),\$p" "$LOG" | grep 'msg="reconcile: ' | sed 's/^/    log: /'
	consistent "$1"
}

# creator ROUND CLIENT: create instances one after another until killed.
creator() {
	_j=1
	while :; do
		_n="k$1-$2-$_j"
		mkdir -p "$CG/dt-$_n"
		apicall -s "$SOCK" POST /v1/instances "{\"name\":\"$_n\",\"container_id\":\"$_n\",\"cgroup\":\"$CG/dt-$_n\",\"memory\":$MIB,\"gpus\":[\"0\"]}" >/dev/null 2>&1 || exit 0
		_j=$((_j + 1))
		[ $_j -le 8 ] || exit 0
	done
}

# destroyer NAME...: destroy instances one after another until killed.
destroyer() {
	for _n in "$@"; do
		apicall -s "$SOCK" DELETE "/v1/instances/$_n" >>/tmp/destroys.out 2>&1 || exit 0
	done
}

# kill_at ge|le N: kill -9 the daemon as soon as the kernel holds at least
# (ge) or at most (le) N instances.
kill_at() {
	_i=0
	while :; do
		_n=$(cgpuadm list | wc -l)
		case $1 in
		ge) [ "$_n" -ge "$2" ] && break ;;
		le) [ "$_n" -le "$2" ] && break ;;
		esac
		_i=$((_i + 1))
		[ $_i -lt 1000 ] || break
		sleep 0.01
	done
	kill -9 "$DPID"
	wait 2>/dev/null
	DPID=
}

round=0
for at in 1 4 9 15; do
	round=$((round + 1))
	start_daemon
	base=$(cgpuadm list | wc -l)
	for c in 1 2 3; do
		creator "$round" "$c" &
	done
	kill_at ge $((base + at))
	echo "round $round: killed during creates, at $at new kernel instances"
	restart "round $round (creates)"
	stop_daemon KILL
done

round=0
for step in 1 3 6; do
	round=$((round + 1))
	start_daemon
	names=$(daemon_names)
	have=$(echo "$names" | grep -c .)
	for c in 0 1 2; do
		# shellcheck disable=SC2046 # one name a word
		destroyer $(echo "$names" | awk -v c="$c" 'NR % 3 == c') &
	done
	kill_at le $((have - step))
	echo "destroy round $round: killed at $((have - step)) of $have, $(grep -c '^204' /tmp/destroys.out 2>/dev/null) destroys answered"
	rm -f /tmp/destroys.out
	restart "round $round (destroys)"
	stop_daemon KILL
done
echo "repairs logged: $(grep -c 'msg="reconcile: ' "$LOG")"

echo "### the rest goes through the API, and nothing is left"
start_daemon
for n in $(daemon_names); do
	api DELETE "/v1/instances/$n"
	expect 204 "destroy $n"
done
assert_eq "" "$(kernel_names)" "kernel instances at the end"
assert_eq 0 "$(pins)" "pins at the end"
pass
