#!/bin/sh
# At most max_inst (20) instances per GPU: the 21st is refused with ENOSPC
# and a message that says why; other GPUs are not affected.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

i=1
while [ $i -le 20 ]; do
	adm create "t$i" --gpu 0 --mem 1M
	i=$((i + 1))
done
adm_err ENOSPC create t21 --gpu 0 --mem 1M
echo "$adm_out" | grep -q "Error occurs when creating cGPU instance" ||
	fail "the refusal does not say why: $adm_out"
assert_eq 0 "$(cat /proc/cgpu_km/0/free_weight)" "free_weight with 20"
echo 19 >/proc/cgpu_km/0/max_inst 2>/dev/null && fail "max_inst below the instances accepted"
adm create t21 --gpu 1 --mem 1M
adm destroy t20
adm create t22 --gpu 0 --mem 1M
adm_err ENOSPC create t23 --gpu 0 --mem 1M

echo "### max_inst 5 on GPU 1"
echo 5 >/proc/cgpu_km/1/max_inst || fail "max_inst 5"
for n in a b c d; do
	adm create "t1$n" --gpu 1 --mem 1M
done
adm_err ENOSPC create t1e --gpu 1 --mem 1M
adm_err ENOSPC set t1a --weight 2
