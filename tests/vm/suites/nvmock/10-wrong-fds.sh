#!/bin/sh
# File descriptors of the wrong kind are refused wherever the ABI takes one
# (docs/nvidia-abi.md 8, 10.6): REGISTER_FD's ctl_fd, MM_INITIALIZE's uvmFd,
# rmCtrlFd of REGISTER_GPU / REGISTER_GPU_VASPACE / MAP_EXTERNAL_ALLOCATION,
# and escapes issued on the wrong node. The cases are nvhostile's.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

out=$(nvhostile -n 1 2>&1)
echo "$out" | grep -E 'fd|Fd|node ' | sed 's/^/  /'

kinds="pipe devnull nvidia0-fd minus-1 closed-fd huge-fd"
cases=$(
	for k in $kinds uvm-fd itself; do echo "REGISTER_FD ctl_fd=$k"; done
	echo "REGISTER_FD nvidia0 -> nvidiactl"
	echo "REGISTER_FD of an fd already linked"
	echo "REGISTER_FD of an fd already linked, to another ctl"
	echo "REGISTER_FD issued on a uvm fd"
	for k in $kinds nvidiactl-fd uninitialised-uvm-fd initialised-uvm-fd; do
		echo "UVM MM_INITIALIZE uvmFd=$k"
	done
	echo "UVM MM_INITIALIZE on the initialised fd itself"
	for k in $kinds uvm-fd; do echo "UVM REGISTER_GPU rmCtrlFd=$k"; done
	for k in $kinds uvm-fd; do echo "UVM REGISTER_GPU_VASPACE rmCtrlFd=$k"; done
	for k in pipe "uvm fd" -1; do echo "UVM MAP_EXTERNAL_ALLOCATION rmCtrlFd $k"; done
	for e in RM_FREE RM_CONTROL RM_ALLOC RM_DUP_OBJECT RM_VID_HEAP_CONTROL \
		CARD_INFO CHECK_VERSION_STR ATTACH_GPUS_TO_FD; do
		echo "node $e on nvidia0"
	done
	echo "node RM_ALLOC_MEMORY on nvidiactl"
	echo "XFER_CMD wrapping a ctl-only escape on nvidia0"
)
n=0
echo "$cases" | {
	bad=0
	while IFS= read -r c; do
		n=$((n + 1))
		if ! echo "$out" | grep -Fq -x -e "ok   $c" &&
			! echo "$out" | grep -Fq -e "ok   $c: "; then
			echo "missing or failed: $c"
			echo "$out" | grep -F -e "$c" | sed 's/^/    /'
			bad=1
		fi
	done
	echo "$n wrong-fd and wrong-node cases checked"
	[ $bad = 0 ]
} || fail "a wrong-kind fd or node was not refused as documented"
expect_idle "at the end"
