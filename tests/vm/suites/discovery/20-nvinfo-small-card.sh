#!/bin/sh
# Discovery follows the driver: one 3 GiB card under a 535 driver (the
# 436-byte FB_GET_INFO_V2 layout), and free memory that drops while a
# client holds an allocation.
. /opt/cgpu/lib.sh

reload_nvmock num_gpus=1 mem_mib=3072 version=535.104.05
out=$(nvinfo -json) || fail "nvinfo failed: $out"
echo "$out"
echo "$out" | grep -q '"driver_version": "535.104.05"' || fail "driver version not 535.104.05"
echo "$out" | grep -q '"memory_total": 3221225472,' || fail "total is not 3 GiB"
echo "$out" | grep -q '"memory_free": 3221225472' || fail "free is not 3 GiB on an idle card"

: >/tmp/hold.out
fakecuda alloc 1G hold 30 >/tmp/hold.out 2>&1 &
pid=$!
i=0
while ! grep -q holding /tmp/hold.out; do
	i=$((i + 1)); [ $i -gt 100 ] && fail "fakecuda did not start: $(cat /tmp/hold.out)"
	sleep 0.1
done
out=$(nvinfo -json) || fail "nvinfo failed: $out"
kill -9 $pid; wait $pid 2>/dev/null
echo "$out" | grep -q '"memory_free": 2147483648' || fail "free is not 2 GiB while 1 GiB is held: $out"
reload_nvmock
