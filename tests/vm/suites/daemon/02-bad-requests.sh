#!/bin/sh
# Malformed and absurd requests get a 4xx with a message and change
# nothing, in the kernel or in the daemon.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
mkdir -p "$CG/dt-b"
ok='"container_id":"c1","cgroup":"/sys/fs/cgroup/dt-b"'

# bad CODE ERRCODE METHOD PATH [BODY]
bad() {
	_want=$1 _err=$2
	shift 2
	api "$@"
	echo "$* -> $code $body" | cut -c1-240
	expect "$_want" "$*"
	echo "$body" | grep -q "\"code\":\"$_err\"" || fail "$*: code is not $_err: $body"
	echo "$body" | grep -q '"message":"..*"' || fail "$*: no message: $body"
}

bad 400 bad_request POST /v1/instances '{"container_id":'
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":1048576,\"memroy\":1}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":1048576}{}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":\"1G\"}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":0}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":18446744073709551615}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":1048576,\"weight\":99999}"
bad 400 bad_request POST /v1/instances '{"container_id":"c1","cgroup":"/sys/fs/cgroup/../../etc","memory":1048576}'
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":1048576,\"gpus\":[\"7\"]}"
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":1048576,\"placement\":\"random\"}"
# More memory than any card has: the message says so, with the prefix.
bad 400 bad_request POST /v1/instances "{$ok,\"memory\":$((1024 * 1024 * MIB))}"
echo "$body" | grep -q "Error occurs when creating cGPU instance: " || fail "no ACK prefix: $body"
# A cgroup that does not exist.
bad 400 bad_request POST /v1/instances '{"container_id":"c1","cgroup":"/sys/fs/cgroup/dt-nonexistent","memory":1048576}'
big=$(head -c 70000 /dev/zero | tr '\0' a)
bad 413 too_large POST /v1/instances "{\"container_id\":\"$big\"}"
api -t text/plain POST /v1/instances "{$ok,\"memory\":1048576}"
expect 415 "text/plain body"
bad 405 bad_request PUT /v1/instances
bad 404 not_found GET /v1/instances/nosuch
bad 404 not_found DELETE /v1/instances/nosuch
bad 404 not_found GET /v2/gpus
bad 400 bad_request PATCH /v1/instances/nosuch '{}'

assert_eq "" "$(kernel_names)" "kernel instances"
assert_eq "" "$(daemon_names)" "daemon instances"
# The daemon still works after all that.
create ok1 dt-b $MIB
expect 201 "a good create after the bad ones"
api DELETE /v1/instances/ok1
expect 204 "destroy"
pass
