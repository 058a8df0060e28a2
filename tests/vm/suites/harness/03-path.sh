#!/bin/sh
# Our guest binaries sit in /opt/cgpu/bin, first on PATH; the modules dir exists.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

case ":$PATH:" in
*:/opt/cgpu/bin:*) ;;
*) fail "/opt/cgpu/bin is not on PATH ($PATH)" ;;
esac
[ -d /opt/cgpu/modules ] || fail "/opt/cgpu/modules is missing"
echo "PATH=$PATH"
echo "binaries:" /opt/cgpu/bin/*
echo "modules: " /opt/cgpu/modules/*
echo "kernel:   $(uname -r)"
