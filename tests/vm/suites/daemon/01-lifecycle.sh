#!/bin/sh
# cgpud end to end on cgpu.ko: discovery over the RM ABI and the CDI spec
# written at start, a create over the socket makes the kernel instance and
# the limit holds for a fake CUDA client in the container's cgroup, the
# device filter hides the other GPU and /dev/cgpu, a resize changes the
# kernel's limit, a destroy refuses while memory is held and goes once it
# is not, /metrics has the numbers.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2
start_daemon

api GET /v1/version
expect 200 "version"
echo "$body" | grep -q '"abi_major":' || fail "version without the module: $body"
api GET /v1/gpus
expect 200 "gpus"
assert_eq 2 "$(echo "$body" | grep -o '"uuid":' | wc -l)" "GPUs discovered"
api GET /v1/health
expect 200 "health: $body"
grep -q 'cgpu.io/gpu' "$CDI/cgpu.yaml" || fail "no CDI spec written at start"
grep -q '/dev/nvidia1' "$CDI/cgpu.yaml" || fail "the CDI spec lacks GPU 1"

echo "### create 64 MiB on GPU 0"
create d1 dt-a $((64 * MIB)) '"gpus":["0"]'
expect 201 "create"
echo "$body" | grep -q '"state":"ready"' || fail "not ready: $body"
assert_eq "d1.0" "$(kernel_names)" "kernel instances"
cgpuadm stats d1.0 | grep -q "limit=$((64 * MIB)) " || fail "kernel limit: $(cgpuadm stats d1.0)"

echo "### the limit holds in the cgroup"
in_cg dt-a fakecuda meminfo alloc 32M alloc 32M alloc 1
assert_eq 2 "$rc" "fakecuda exit"
echo "$out" | grep -q "total=$((64 * MIB))" || fail "the card's total is not the slice"
echo "$out" | grep -q "^alloc 1: CUDA_ERROR_OUT_OF_MEMORY" || fail "one byte past the slice was allowed"
out=$(fakecuda alloc 100M 2>&1) || fail "a process outside the cgroup is limited: $out"

echo "### the device filter: GPU 1 and /dev/cgpu are denied, GPU 0 is not"
in_cg dt-a sh -c 'exec 3</dev/nvidia0'
assert_eq 0 "$rc" "open /dev/nvidia0"
in_cg dt-a sh -c 'exec 3</dev/nvidia1'
[ "$rc" != 0 ] || fail "the container opened the other GPU"
in_cg dt-a sh -c 'exec 3</dev/cgpu'
[ "$rc" != 0 ] || fail "the container opened /dev/cgpu"

echo "### resize to 128 MiB"
api PATCH /v1/instances/d1 "{\"memory\":$((128 * MIB))}"
expect 200 "resize"
cgpuadm stats d1.0 | grep -q "limit=$((128 * MIB)) " || fail "kernel limit after resize: $(cgpuadm stats d1.0)"
in_cg dt-a fakecuda alloc 100M
assert_eq 0 "$rc" "100M in 128M"

echo "### a destroy while memory is held is refused; then it goes"
sh -c 'echo $$ >"$0/cgroup.procs" && exec fakecuda -q alloc 8M hold' "$CG/dt-a" >/tmp/hold.out 2>&1 &
hold=$!
i=0
until grep -q holding /tmp/hold.out; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "holder did not start: $(cat /tmp/hold.out)"
	sleep 0.1
done
api GET /v1/instances/d1
expect 200 "get"
echo "$body" | grep -q "\"used\":$((8 * MIB))" || fail "used not reported: $body"
api GET /metrics
expect 200 "metrics"
echo "$body" | grep -q '^cgpu_instance_memory_used_bytes{.*name="d1".*} 8.388608e+06' || fail "metrics lack the used bytes: $(echo "$body" | grep cgpu_instance_memory_used)"
echo "$body" | grep -q '^cgpu_gpu_memory_total_bytes' || fail "no GPU totals in /metrics"
api DELETE /v1/instances/d1
expect 409 "destroy while held"
echo "$body" | grep -q '"code":"busy"' || fail "not busy: $body"
kill "$hold"
wait "$hold" 2>/dev/null
api DELETE /v1/instances/d1
expect 204 "destroy"
assert_eq "" "$(kernel_names)" "kernel instances after destroy"
assert_eq "" "$(daemon_names)" "daemon instances after destroy"
assert_eq 0 "$(pins)" "filter pins after destroy"
stop_daemon
grep -q "stopping; kernel instances stay in place" "$LOG" || fail "no clean stop"
pass
