#!/bin/sh
# Bounded randomised stress: processes in two instances and outside allocate,
# free, exit and get killed for a while. The limits hold throughout and at
# the end every instance's use is 0 and nvmock's counters agree.
# vm-timeout: 400
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

DURATION=${STRESS_SECONDS:-40}
instance t1 0 24M t_a t_a/t_x
instance t2 0 40M t_b
mkcg t_free

seed=12345
rnd() { # N: a pseudo-random number in 0..N-1
	seed=$(((seed * 1103515245 + 12345) % 2147483648))
	echo $(((seed / 65536) % $1))
}
size() {
	case $(rnd 5) in
	0) echo 1 ;; 1) echo 100K ;; 2) echo 1M ;; 3) echo 2M ;; *) echo 3M ;;
	esac
}
job() { # a random fakecuda command line
	case $(rnd 7) in
	0) echo "-q alloc $(size) alloc $(size) free last alloc $(size)" ;;
	1) echo "-q threads 4 $(size) 3" ;;
	2) echo "-q alloc $(size) dup last free all" ;;
	3) echo "-q legacy-alloc $(size) alloc $(size) free-device" ;;
	4) echo "-q children 2 alloc $(size) alloc $(size)" ;;
	5) echo "-q --alloc-form nvos21 alloc $(size) free-client alloc $(size)" ;;
	*) echo "-q alloc 3M alloc 3M alloc 3M" ;;
	esac
}

check_limits() {
	for i in t1 t2; do
		u=$(stat_of $i used)
		l=$(stat_of $i limit)
		[ "$u" -le "$l" ] || fail "$i: used $u over limit $l"
	done
}

end=$(($(cut -d. -f1 /proc/uptime) + DURATION))
n=0
pids=
while [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; do
	case $(rnd 4) in
	0) cg=t_a ;; 1) cg=t_a/t_x ;; 2) cg=t_b ;; *) cg=t_free ;;
	esac
	# shellcheck disable=SC2046
	sh -c 'echo $$ >"$0/cgroup.procs" && exec fakecuda "$@" hold 1' "$CG/$cg" $(job) >/dev/null 2>&1 &
	pids="$pids $!"
	n=$((n + 1))
	if [ $((n % 3)) = 0 ]; then
		# kill -9 a random one of the live ones
		set -- $pids
		[ $# -gt 0 ] && kill -9 "$(eval echo \$$(($(rnd $#) + 1)))" 2>/dev/null
	fi
	if [ $((n % 8)) = 0 ]; then
		check_limits
		for p in $pids; do wait "$p" 2>/dev/null; done
		pids=
	fi
	# Random pacing of the churn (0 to 0.2 s), not a wait for a state.
	sleep 0.$(rnd 3)
done
for p in $pids; do wait "$p" 2>/dev/null; done
check_limits
echo "ran $n processes in ${DURATION}s"
cgpuadm list
for i in t1 t2; do
	assert_eq 0 "$(stat_of $i used)" "$i used at the end"
	assert_eq 0 "$(stat_of $i live)" "$i live allocations at the end"
	assert_eq 0 "$(stat_of $i procs)" "$i processes at the end"
done
expect_idle "at the end"
