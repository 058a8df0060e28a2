#!/bin/sh
# 20 instances fill a GPU; the 21st is refused with 409 no_space and ACK's
# wording, before the kernel is asked; the kernel agrees with the daemon.
# vm-timeout: 240
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

start_daemon
i=1
while [ $i -le 20 ]; do
	create "cap$i" "dt-cap$i" $MIB '"gpus":["0"]'
	expect 201 "create $i"
	i=$((i + 1))
done
assert_eq 20 "$(kernel_names | wc -l)" "kernel instances"
create cap21 dt-cap21 $MIB '"gpus":["0"]'
echo "21st: $code $body"
expect 409 "the 21st create"
echo "$body" | grep -q '"code":"no_space"' || fail "code: $body"
echo "$body" | grep -q '"message":"Error occurs when creating cGPU instance: GPU 0 has 20 instances, the most a GPU takes' || fail "message: $body"
assert_eq 20 "$(kernel_names | wc -l)" "kernel instances after the refusal"
api GET /v1/gpus
echo "$body" | grep -q '"instances":20,"max_instances":20' || fail "gpus: $body"
# One goes, one more fits.
api DELETE /v1/instances/cap7
expect 204 "destroy cap7"
create cap21 dt-cap21 $MIB '"gpus":["0"]'
expect 201 "create after a destroy"
assert_eq 20 "$(daemon_names | wc -l)" "daemon instances"
pass
