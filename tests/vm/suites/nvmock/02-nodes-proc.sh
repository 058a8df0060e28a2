#!/bin/sh
# Device nodes, /proc/devices and /proc/driver/nvidia look like the real
# driver's (docs/nvidia-abi.md sections 1 and 10.8).
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

# node PATH MAJOR MINOR: a 0666 character device with that number.
node() {
	[ -c "$1" ] || fail "$1 is not a character device"
	got=$(stat -c '%t %T %a' "$1") || fail "stat $1"
	want=$(printf '%x %x 666' "$2" "$3")
	assert_eq "$want" "$got" "$1 major, minor (hex) and mode"
}

grep -q '^195 nvidia$' /proc/devices || fail "/proc/devices has no '195 nvidia'"
grep -q '^195 nvidiactl$' /proc/devices || fail "/proc/devices has no '195 nvidiactl'"
uvm_major=$(awk '$2 == "nvidia-uvm" { print $1 }' /proc/devices)
[ -n "$uvm_major" ] || fail "/proc/devices has no nvidia-uvm line"
[ "$uvm_major" != 195 ] || fail "nvidia-uvm must have a dynamic major, not 195"
echo "nvidia-uvm major: $uvm_major"

node /dev/nvidiactl 195 255
node /dev/nvidia0 195 0
node /dev/nvidia1 195 1
[ -e /dev/nvidia2 ] && fail "/dev/nvidia2 exists with num_gpus=2"
node /dev/nvidia-uvm "$uvm_major" 0
node /dev/nvidia-uvm-tools "$uvm_major" 1

# version: two lines [10.8]
v=/proc/driver/nvidia/version
cat $v
assert_eq 2 "$(wc -l <$v)" "lines in $v"
sed -n 1p $v | grep -Eq "^NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $VERSION  Release Build  \(.*\)  .+$" ||
	fail "first line of $v is not in the driver's format"
sed -n 2p $v | grep -Eq '^GCC version:  .+$' || fail "second line of $v is not 'GCC version:  ...'"

# gpus/<bus>/information [10.8]
dirs=$(cd /proc/driver/nvidia/gpus && echo *)
assert_eq "0000:01:00.0 0000:02:00.0" "$dirs" "/proc/driver/nvidia/gpus entries"
for g in 0 1; do
	f=/proc/driver/nvidia/gpus/0000:0$((g + 1)):00.0/information
	cat -A "$f" 2>/dev/null || cat "$f"
	awk '
	BEGIN {
		lab[1] = "Model: \t\t ";        re[1] = "^.+$"
		lab[2] = "IRQ:   \t\t ";        re[2] = "^[0-9]+$"
		lab[3] = "GPU UUID: \t ";       re[3] = "^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
		lab[4] = "Video BIOS: \t ";     re[4] = "^([0-9a-f][0-9a-f]|[?][?])([.]([0-9a-f][0-9a-f]|[?][?])){4}$"
		lab[5] = "Bus Type: \t ";       re[5] = "^(PCIe|PCI)$"
		lab[6] = "DMA Size: \t ";       re[6] = "^[0-9]+ bits$"
		lab[7] = "DMA Mask: \t ";       re[7] = "^0x[0-9a-f]+$"
		lab[8] = "Bus Location: \t ";   re[8] = "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}[.][0-9a-f]$"
		lab[9] = "Device Minor: \t ";   re[9] = "^[0-9]+$"
		lab[10] = "GPU Firmware: \t ";  re[10] = "^.+$"
		lab[11] = "GPU Excluded:\t ";   re[11] = "^(Yes|No)$"
		n = 11
	}
	{
		if (NR > n) { print "extra line " NR ": " $0; bad = 1; next }
		if (substr($0, 1, length(lab[NR])) != lab[NR]) {
			print "line " NR ": want label \"" lab[NR] "\": " $0; bad = 1; next
		}
		v = substr($0, length(lab[NR]) + 1)
		if (v !~ re[NR]) { print "line " NR ": bad value \"" v "\""; bad = 1 }
	}
	END { if (NR != n) { print NR " lines, want " n; bad = 1 }; exit bad }
	' "$f" || fail "$f is not in the driver's format"
	field() { sed -n "s/^$1:[[:space:]]*//p" "$f"; }
	assert_eq "NVIDIA Mock GPU" "$(field Model)" "GPU $g model"
	assert_eq "GPU-6e766d6f-636b-4000-8000-00000000000$g" "$(field 'GPU UUID')" "GPU $g UUID"
	assert_eq "0000:0$((g + 1)):00.0" "$(field 'Bus Location')" "GPU $g bus location"
	assert_eq "$g" "$(field 'Device Minor')" "GPU $g minor"
	assert_eq "No" "$(field 'GPU Excluded')" "GPU $g excluded"
done

# what fakecuda read from there matches CARD_INFO's minor
fc 0 -g 1 init
assert_eq "GPU-6e766d6f-636b-4000-8000-000000000001" "$(val uuid '^init: OK')" "UUID fakecuda took for minor 1"
expect_idle "at the end"
