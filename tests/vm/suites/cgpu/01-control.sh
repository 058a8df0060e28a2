#!/bin/sh
# The control plane: /dev/cgpu commands and the /proc/cgpu_km view agree,
# names are unique, set/attach/detach/destroy give the documented errnos.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

adm version
assert_eq "abi=1.0 max_inst=20 name_len=64" "$adm_out" "version"
assert_eq "1.0.0" "$(cat /proc/cgpu_km/version)" "/proc/cgpu_km/version"
assert_eq "nvidia: nvmock
nvidia-uvm: nvmock
armed: no" "$(cat /proc/cgpu_km/hooks)" "hooks ready, not armed (nothing attached)"

adm create t1 --gpu 0 --mem 1G
id1=$adm_out
adm create t2 --gpu 0 --mem 512M --weight 3
id2=$adm_out
adm_err EEXIST create t1 --gpu 1 --mem 1G
adm list
echo "$adm_out"
assert_eq 2 "$(echo "$adm_out" | grep -c '^id=')" "instances listed"
assert_eq "$GIB" "$(stat_of t1 limit)" "t1 limit"
assert_eq 3 "$(stat_of t2 weight)" "t2 weight"

echo "### /proc/cgpu_km"
ls -R /proc/cgpu_km
assert_eq "$id1" "$(cat /proc/cgpu_km/0/t1/id)" "proc id"
assert_eq "$GIB" "$(cat /proc/cgpu_km/0/t1/memsize)" "proc memsize"
assert_eq 3 "$(cat /proc/cgpu_km/0/t2/weight)" "proc weight"
assert_eq "Free: $GIB" "$(cat /proc/cgpu_km/0/t1/meminfo)" "proc meminfo"
assert_eq 20 "$(cat /proc/cgpu_km/0/max_inst)" "proc max_inst"
assert_eq 16 "$(cat /proc/cgpu_km/0/free_weight)" "proc free_weight (20 - 1 - 3)"
assert_eq 2 "$(cat /proc/cgpu_km/0/policy)" "weighted policy"
echo $((2 * GIB)) >/proc/cgpu_km/0/t1/memsize || fail "memsize write"
assert_eq $((2 * GIB)) "$(stat_of t1 limit)" "limit after a memsize write"
echo 0 >/proc/cgpu_km/0/t1/memsize 2>/dev/null && fail "memsize 0 accepted"
echo garbage >/proc/cgpu_km/0/t1/memsize 2>/dev/null && fail "memsize garbage accepted"
echo 3 >/proc/cgpu_km/0/max_inst 2>/dev/null && fail "max_inst below the weights in use accepted"
echo 21 >/proc/cgpu_km/0/max_inst 2>/dev/null && fail "max_inst 21 accepted"
echo 10 >/proc/cgpu_km/0/max_inst || fail "max_inst 10 refused"
assert_eq 6 "$(cat /proc/cgpu_km/0/free_weight)" "free_weight after max_inst 10"
echo 20 >/proc/cgpu_km/0/max_inst || fail "max_inst 20 refused"

echo "### set"
adm set t2 --weight 1
assert_eq 0 "$(cat /proc/cgpu_km/0/policy)" "equal-share policy"
adm_err ENOSPC set t2 --weight 20
adm_err EINVAL set t2 --mem 0
adm set t2 --mem 1M --weight 2
assert_eq "$MIB 2" "$(stat_of t2 limit) $(stat_of t2 weight)" "after set"

echo "### attach, detach"
mkcg t_a t_b
adm attach t1 "$CG/t_a"
adm_err EEXIST attach t1 "$CG/t_a"
adm_err EEXIST attach t2 "$CG/t_a"
adm attach t2 "$CG/t_b"
adm create t3 --gpu 1 --mem 1G
adm attach t3 "$CG/t_a"
assert_eq 1 "$(stat_of t1 cgroups)" "t1 cgroups"
adm_err ENOENT detach t2 "$CG/t_a"
adm detach t1 "$CG/t_a"
adm_err ENOENT detach t1 "$CG/t_a"
assert_eq 0 "$(stat_of t1 cgroups)" "t1 cgroups after detach"

echo "### destroy"
adm destroy t1
adm_err ENOENT destroy "$id1"
adm destroy "$id2"
adm destroy t3
[ -e /proc/cgpu_km/0/t1 ] && fail "t1 still in /proc"
adm list
assert_eq "" "$adm_out" "no instance left"
