#!/bin/sh
# Who may use the socket: it is 0660 root:cgpu; a peer outside the group
# cannot connect, a member of socket_group may read but not change
# (SO_PEERCRED, 403), a member of write_group (by a supplementary group)
# may change, root may do all. Then SIGHUP: the new placement applies, a
# changed sweep_interval is reported as needing a restart, and a key given
# as a flag (log_level) keeps the flag's value.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

cp /etc/group /tmp/group.orig
trap 'cp /tmp/group.orig /etc/group; cleanup' EXIT
grep -q '^cgpu:' /etc/group || echo 'cgpu:x:999:' >>/etc/group
echo 'cgpu-admin:x:998:' >>/etc/group
rgid=$(sed -n 's/^cgpu:x:\([0-9]*\):.*/\1/p' /etc/group)
conf=/tmp/cgpud-test.toml
printf 'log_level = "info"\nplacement = "binpack"\n' >"$conf"
start_daemon --config "$conf"

assert_eq "660 $rgid" "$(stat -c '%a %g' "$SOCK")" "socket mode and group"

# as UID GID GROUPS METHOD PATH [BODY]: apicall as that peer.
as() {
	_u=$1 _g=$2 _gs=$3
	shift 3
	_out=$(apicall -uid "$_u" -gid "$_g" -groups "$_gs" -s "$SOCK" "$@" 2>&1)
	code=$(echo "$_out" | head -1)
	body=$(echo "$_out" | sed 1d)
	echo "uid $_u gid $_g groups [$_gs] $1 $2 -> $(echo "$_out" | tr '\n' ' ' | cut -c1-160)"
}

mkdir -p "$CG/dt-acc"
req="{\"name\":\"acc\",\"container_id\":\"acc\",\"cgroup\":\"$CG/dt-acc\",\"memory\":$MIB}"

as 1000 1000 "" GET /v1/gpus
echo "$_out" | grep -q "permission denied" || fail "a stranger connected: $_out"
as 1000 "$rgid" "" GET /v1/gpus
expect 200 "a reader by its gid"
as 1000 1000 "$rgid" GET /v1/instances
expect 200 "a reader by a supplementary group"
as 1000 1000 "$rgid" POST /v1/instances "$req"
expect 403 "a reader's create"
echo "$body" | grep -q '"code":"forbidden"' || fail "not forbidden: $body"
as 1000 1000 "$rgid" DELETE /v1/instances/x
expect 403 "a reader's destroy"
assert_eq "" "$(kernel_names)" "nothing was made"
as 1000 1000 "$rgid,998" POST /v1/instances "$req"
expect 201 "a writer's create"
assert_eq "acc.0" "$(kernel_names)" "the writer's instance"
as 1000 1000 "$rgid,998" DELETE /v1/instances/acc
expect 204 "a writer's destroy"
grep -q 'refused a request: peer not permitted' "$LOG" || fail "refusals are not logged"

echo "### SIGHUP"
printf 'log_level = "error"\nplacement = "spread"\nsweep_interval = "5s"\n' >"$conf"
kill -HUP "$DPID"
i=0
until grep -q 'configuration reloaded' "$LOG"; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "no reload logged"
	sleep 0.1
done
grep 'reload' "$LOG" | sed 's/^/    log: /'
grep -q 'next restart.*keys=sweep_interval' "$LOG" || fail "the sweep_interval change is not reported as needing a restart"
grep -q 'configuration reloaded.*changed="placement,sweep_interval"' "$LOG" || fail "log_level, given as a flag, changed with the file"
api GET /v1/version
expect 200 "the old socket still serves"
# spread: two instances that name no GPU land on different GPUs.
create sp1 dt-sp1 $MIB
expect 201 "sp1"
create sp2 dt-sp2 $MIB
expect 201 "sp2"
g1=$(kernel_names | sed -n 's/^sp1\.//p')
g2=$(kernel_names | sed -n 's/^sp2\.//p')
echo "spread: sp1 on GPU $g1, sp2 on GPU $g2"
if [ -z "$g1" ] || [ "$g1" = "$g2" ]; then
	fail "spread placement after the reload: sp1 on GPU $g1, sp2 on GPU $g2"
fi
api DELETE /v1/instances/sp1
api DELETE /v1/instances/sp2
pass
