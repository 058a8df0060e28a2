#!/bin/sh
# The harness packed and loaded nvmock.ko and cgpu.ko (a run with --no-load
# or CGPU_VM_MODULES fails here: this suite tests the normal setup); the
# kernel runs our modules with only the expected taint.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

for m in nvmock cgpu; do
	[ -f /opt/cgpu/modules/$m.ko ] || fail "$m.ko is not packed"
	module_loaded $m || fail "$m.ko is packed but not loaded"
	echo "$m loaded"
done
t=$(cat /proc/sys/kernel/tainted)
assert_eq 0 $((t & ~12288)) "taint bits other than O and E"
