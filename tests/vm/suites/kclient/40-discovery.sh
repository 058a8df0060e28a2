#!/bin/sh
# daemon/internal/gpu's New, as the daemon calls it, in a binary built without cgo
# (so without NVML): it falls back to procfs and the RM ABI and finds
# exactly the two mock GPUs nvmock.ko was loaded with, memory included.
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/run-go-test.inc
. "$(dirname "$0")/run-go-test.inc"

# Back to the default mock GPUs for the tests after this one, pass or fail.
trap 'reload_nvmock' EXIT
# One driver of each FB_GET_INFO_V2 size the 545+ branches have (444, 460,
# 1028 B): the RM query must send the size the driver takes.
for v in 550.163.01 570.195.03 580.65.06; do
	echo "### nvmock $v"
	reload_nvmock num_gpus=2 mem_mib=4096,12288 gpu_names=Mock-A,Mock-B \
		gpu_uuids=GPU-00000000-1111-2222-3333-444444444444,GPU-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee \
		version=$v
	# The inventory TestVMDiscover wants, in JSON (its quotes are data).
	# shellcheck disable=SC2089,SC2090
	export CGPU_VM_DISCOVERY_WANT='{"DriverVersion":"'$v'","Source":"procfs","GPUs":[
 {"Index":0,"Minor":0,"UUID":"GPU-00000000-1111-2222-3333-444444444444","Name":"Mock-A","BusID":"0000:01:00.0","MemoryTotal":4294967296},
 {"Index":1,"Minor":1,"UUID":"GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee","Name":"Mock-B","BusID":"0000:02:00.0","MemoryTotal":12884901888}]}'
	go_vm_test gpu.test '^TestVMDiscover$'
done
