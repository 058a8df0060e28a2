#!/bin/sh
# A stopped daemon leaves the kernel's instances in place (the limit keeps
# holding while it is away) and a restarted one finds them as they were.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
create r1 dt-r1 $((16 * MIB)) '"gpus":["0"]'
expect 201 "create"
stop_daemon TERM
[ -S "$SOCK" ] && fail "the socket was left behind"
assert_eq "r1.0" "$(kernel_names)" "kernel instances with the daemon stopped"
in_cg dt-r1 fakecuda alloc 16M alloc 1
assert_eq 2 "$rc" "the limit while the daemon is away"
start_daemon
assert_eq "r1" "$(daemon_names)" "daemon instances after the restart"
api GET /v1/instances/r1
echo "$body" | grep -q '"state":"ready"' || fail "after restart: $body"
assert_eq "r1.0" "$(kernel_names)" "kernel instances after the restart"
api DELETE /v1/instances/r1
expect 204 "destroy"
pass
