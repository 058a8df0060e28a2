#!/bin/sh
# nvmock unloads cleanly once no fd is open (and not while one is), its
# nodes and /proc entries go with it, and it loads again.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

cgpu=0
if module_loaded cgpu; then
	cgpu=1
	rmmod cgpu || fail "rmmod cgpu"
fi

start_hold alloc 1G managed 2M
if rmmod nvmock 2>/dev/null; then
	fail "rmmod nvmock succeeded while a process held its fds"
fi
module_loaded nvmock || fail "nvmock is gone although rmmod failed"
stop_hold
expect_idle "before rmmod"

# A normal run first, so the module has seen every kind of object.
fc 0 alloc 1G dup last legacy-alloc 1M managed 2M sempool 2M meminfo free all
rmmod nvmock || fail "rmmod nvmock with no fd open"
module_loaded nvmock && fail "nvmock still loaded after rmmod"
[ -e /dev/nvidiactl ] && fail "/dev/nvidiactl survives rmmod"
[ -e /proc/driver/nvidia ] && fail "/proc/driver/nvidia survives rmmod"
grep -q 'nvidia-uvm' /proc/devices && fail "nvidia-uvm still in /proc/devices"
[ -e "$NVMOCK_DEBUGFS" ] && fail "$NVMOCK_DEBUGFS survives rmmod"

insmod "$CGPU_MODULES/nvmock.ko" || fail "insmod nvmock.ko after rmmod"
[ "$cgpu" = 1 ] && { insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko"; }
fc 0 alloc 1M
expect_idle "after reload"
