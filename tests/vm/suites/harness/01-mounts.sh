#!/bin/sh
# The guest's filesystems: devtmpfs, proc, sysfs, debugfs, tracefs, bpffs, /tmp.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh

for want in "/dev devtmpfs" "/proc proc" "/sys sysfs" "/sys/kernel/debug debugfs" \
	"/sys/fs/bpf bpf" "/tmp tmpfs" "/sys/fs/cgroup cgroup2"; do
	# shellcheck disable=SC2086  # two words on purpose
	set -- $want
	got=$(awk -v m="$1" '$2 == m { print $3 }' /proc/mounts | tail -1)
	assert_eq "$2" "$got" "filesystem on $1"
done
grep -q ' tracefs ' /proc/mounts || fail "tracefs is not mounted"
[ -c /dev/null ] || fail "/dev/null is not a character device"
[ -c /dev/kmsg ] || fail "/dev/kmsg is missing"
echo ok >/tmp/probe || fail "/tmp is not writable"
assert_eq ok "$(cat /tmp/probe)" "read back from /tmp"
echo "mounts ok"
