#!/bin/sh
# cgpuctl against the real cgpud: doctor before and after setup, the
# integration files, the inspect table through an instance's life (create,
# resize, rm), -d and -o json, and the exit codes scripts rely on.
# vm-timeout: 180
# shellcheck source=SCRIPTDIR/../../lib.sh
. /opt/cgpu/lib.sh
# shellcheck source=SCRIPTDIR/helpers.inc
. "$(dirname "$0")/helpers.inc"

[ -e /dev/nvidia1 ] || reload_nvmock num_gpus=2
rm -f /etc/cdi/cgpu.yaml /usr/share/containers/oci/hooks.d/cgpu.json
start_daemon
# cgpud writes the CDI spec at start; take it away again so doctor is seen
# to notice a missing one.
[ -f /etc/cdi/cgpu.yaml ] || fail "cgpud did not write the CDI spec at start"
rm -f /etc/cdi/cgpu.yaml

echo "### doctor before setup: the integration files are missing, the rest is fine"
ctl doctor
expect_rc 1 "doctor without the CDI spec"
for c in module driver cgroup bpffs daemon kubelet; do
	echo "$out" | grep -q "^OK  *$c " || fail "doctor: $c not OK"
done
echo "$out" | grep -q "^OK  *driver .*595.45.04" || fail "doctor: driver version"
echo "$out" | grep -q "^FAIL  *cdi .*fix: cgpuctl setup" || fail "doctor: the missing CDI spec"

echo "### setup writes them from cgpud's GPUs; doctor passes"
ctl setup
expect_rc 0 "setup"
grep -q '^kind: cgpu.io/gpu' /etc/cdi/cgpu.yaml || fail "CDI spec kind"
grep -q 'CGPU_CDI_GPU_1=1' /etc/cdi/cgpu.yaml || fail "CDI device for GPU 1"
grep -q '"oci"' /usr/share/containers/oci/hooks.d/cgpu.json || fail "hooks.d file"
ctl doctor
expect_rc 0 "doctor after setup"

echo "### an empty node"
ctl inspect
expect_rc 0 "inspect"
echo "$out" | grep -q "^NAME  *IPADDRESS  *GPU0(Allocated/Total)  *GPU1(Allocated/Total)  *GPU Memory(GiB)$" || fail "inspect header"
echo "$out" | grep -q "  0/16  *0/16  *0/32$" || fail "inspect row"
echo "$out" | grep -q "^0/32 (0%)$" || fail "inspect cluster line"

echo "### create 4 GiB on GPU 0"
mkdir -p "$CG/rt-a"
ctl instance create --name rta --container ctr-a --cgroup "$CG/rt-a" --memory 4 --gpu 0
expect_rc 0 "create"
ctl inspect -d
echo "$out" | grep -q "  4/16  *0/16  *4/32$" || fail "inspect after create"
echo "$out" | grep -q "^4/32 (12%)$" || fail "cluster line after create"
echo "$out" | grep -q "^rta  *ctr-a  *0  *4  *0  *0  *0$" || fail "inspect -d row"
ctl instance show rta -o json
echo "$out" | grep -q '"memory": 4294967296' || fail "show -o json"

echo "### resize to 6 GiB"
ctl instance resize rta --memory 6GiB
expect_rc 0 "resize"
ctl inspect -o json
echo "$out" | grep -q '"allocated": 6442450944' || fail "inspect -o json after resize"

echo "### exit codes: not found 4, unreachable 3, usage 2, refused 1"
ctl instance show nope
expect_rc 4 "show of a missing instance"
ctl --socket /run/nobody.sock inspect
expect_rc 3 "inspect with no daemon"
echo "$err" | grep -q "systemctl start cgpud" || fail "the unreachable error does not say what to do"
ctl inspect --bogus
expect_rc 2 "unknown flag"
mkdir -p "$CG/rt-b"
ctl instance create --container ctr-b --cgroup "$CG/rt-b" --memory 17 --gpu 0
expect_rc 1 "17 GiB on a 16 GiB card"
echo "$err" | grep -q "Error occurs when creating cGPU instance:" || fail "refusal without the cGPU prefix"

echo "### rm: the table is empty again"
ctl instance rm rta
expect_rc 0 "rm"
ctl inspect
echo "$out" | grep -q "^0/32 (0%)$" || fail "inspect after rm"
ctl instance ls -o json
assert_eq "[]" "$out" "instances after rm"
pass
