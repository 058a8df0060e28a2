#!/bin/sh
# A static Go binary from build/guest/bin runs in the guest (nvinfo, which
# make guest builds).
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

bin=/opt/cgpu/bin/nvinfo
[ -x $bin ] || fail "no $bin (make guest builds it)"
out=$($bin --help 2>&1)
rc=$?
echo "$out" | head -20
# A Go binary that did not start (wrong arch, dynamic loader missing) exits
# 126/127 from the shell or prints nothing at all.
if [ $rc -eq 126 ] || [ $rc -eq 127 ]; then
	fail "$bin did not start (exit $rc)"
fi
[ -n "$out" ] || fail "$bin printed nothing"
