#!/bin/sh
# The harness loaded nvmock.ko and cgpu.ko when they were packed (and not
# --no-load); the kernel runs our modules with only the expected taint.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

loaded=0
for m in nvmock cgpu; do
	[ -f /opt/cgpu/modules/$m.ko ] || continue
	module_loaded $m || fail "$m.ko is packed but not loaded"
	echo "$m loaded"
	loaded=1
done
[ $loaded = 1 ] || skip "neither nvmock.ko nor cgpu.ko is packed"
t=$(cat /proc/sys/kernel/tainted)
assert_eq 0 $((t & ~12288)) "taint bits other than O and E"
