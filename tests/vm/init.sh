#!/bin/sh
# PID 1 of the cgpu test guest (packed as /init by tests/vm/run). Mounts the
# usual filesystems, loads our modules, runs the command or the suites, checks
# the kernel log, reports through marker lines on the console, powers off.
# shellcheck disable=SC3043  # busybox sh has local

export PATH=/opt/cgpu/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C
CGPU=/opt/cgpu
CGPU_MODE="exec"
CGPU_SUITES=
CGPU_NO_LOAD=0
CGPU_KMEMLEAK=0
CGPU_TEST_TIMEOUT=120
CGPU_VERBOSE=0
# shellcheck source=/dev/null
. "$CGPU/run.conf"

# Kernel log lines that fail a run.
KLOG_RE='(^|[^A-Za-z_])BUG([^A-Za-z_]|$)|WARNING:|Oops|general protection|refcount_t|list_del corruption|list_add corruption|UBSAN|KASAN|kmemleak:.*suspect|possible circular locking|sleeping function called from invalid context'
# Taint bits that loading our modules sets: O (4096) and E (8192).
TAINT_OK=12288
taint_seen=0

finish() {
	echo "@@CGPU-EXIT $1@@"
	sync
	poweroff -f
	sleep 10
}

setup_failed() {
	echo "vm: guest setup failed: $*"
	dmesg | tail -30 | sed 's/^/klog| /'
	finish 125
}

mounts() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	grep -q "^[^ ]* /dev " /proc/mounts || mount -t devtmpfs devtmpfs /dev
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	mount -t tmpfs -o mode=0755 tmpfs /run
	mount -t cgroup2 cgroup2 /sys/fs/cgroup || setup_failed "mount cgroup2"
	local c
	# shellcheck disable=SC2013  # one line of words
	for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
		echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
			echo "vm: cannot enable cgroup controller $c"
	done
	# A child cgroup for the guest's whole life.  Without one, every test's
	# first mkdir and last rmdir under the root flip the cpuset static keys
	# (cpusets_enabled(): page allocator, scheduler), and the kernel
	# rewrites those hot call sites on both vCPUs.  Under TCG that left
	# both vCPUs retaking an int3 the kernel had already removed, for ever
	# (QEMU ran a stale translation; tests/vm/README.md, "Stuck guests").
	# On a node with containers the keys are on for good, as here.
	mkdir -p /sys/fs/cgroup/cgpu-vm-keep || setup_failed "mkdir cgpu-vm-keep"
	mount -t debugfs debugfs /sys/kernel/debug || setup_failed "mount debugfs"
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null ||
		mount -t tracefs tracefs /sys/kernel/debug/tracing ||
		setup_failed "mount tracefs"
	mount -t bpf bpf /sys/fs/bpf || setup_failed "mount bpffs"
	hostname cgpu-vm
	ip link set lo up 2>/dev/null || true
}

load_modules() {
	local m
	[ "$CGPU_NO_LOAD" = 1 ] && return 0
	for m in nvmock cgpu; do
		[ -f "$CGPU/modules/$m.ko" ] || setup_failed "no $m.ko packed (CGPU_VM_MODULES without --no-load?)"
		insmod "$CGPU/modules/$m.ko" || setup_failed "insmod $m.ko"
		echo "vm: loaded $m.ko"
	done
}

# klog_check WHEN: fail (return 1) if the kernel log since the last check
# holds a detector line, or if the kernel picked up a new taint. Prints the
# report with a "klog| " prefix.
klog_check() {
	local taint bad=0
	dmesg -c >/tmp/klog.new 2>/dev/null
	if grep -E "$KLOG_RE" /tmp/klog.new >/tmp/klog.bad; then
		bad=1
		echo "vm: kernel log check failed $1:"
		sed 's/^/klog| /' /tmp/klog.bad
		echo "vm: kernel log since the last check (up to 120 lines from the first hit):"
		awk -v re="$KLOG_RE" 'hit || $0 ~ re { hit = 1; print }' /tmp/klog.new |
			head -120 | sed 's/^/klog| /'
	fi
	taint=$(cat /proc/sys/kernel/tainted)
	if [ $((taint & ~TAINT_OK)) -ne $((taint_seen & ~TAINT_OK)) ]; then
		bad=1
		echo "vm: kernel log check failed $1: the kernel is now tainted $taint (was $taint_seen)"
		echo "klog| tainted: $taint_seen -> $taint"
	fi
	taint_seen=$taint
	return "$bad"
}

kmemleak_check() {
	local kl=/sys/kernel/debug/kmemleak
	[ "$CGPU_KMEMLEAK" = 1 ] || return 0
	[ -w "$kl" ] || { echo "vm: kmemleak: $kl missing"; return 1; }
	echo "vm: kmemleak: scanning (twice, ~10 s each)"
	echo scan >"$kl"
	echo scan >"$kl"
	cat "$kl" >/tmp/kmemleak
	if [ -s /tmp/kmemleak ]; then
		echo "vm: kmemleak reports suspected leaks:"
		sed 's/^/klog| /' /tmp/kmemleak
		echo "klog| kmemleak: suspected memory leaks (report above)"
		return 1
	fi
	return 0
}

uptime_cs() {
	local up rest
	read -r up rest </proc/uptime
	echo "$up"
}

elapsed() {
	awk -v a="$1" -v b="$(uptime_cs)" 'BEGIN { printf "%.2f", b - a }'
}

# A test may set its own timeout with a line "# vm-timeout: SECONDS".
test_timeout() {
	local t
	t=$(sed -n 's/^# *vm-timeout: *\([0-9][0-9]*\).*/\1/p' "$1" | head -1)
	echo "${t:-$CGPU_TEST_TIMEOUT}"
}

passed=0 failed=0 skipped=0

result() { # KIND NAME DETAIL
	echo "--- $1: $2 ($3)"
	case $1 in
	PASS) passed=$((passed + 1)) ;;
	FAIL) failed=$((failed + 1)) ;;
	SKIP) skipped=$((skipped + 1)) ;;
	esac
}

# kmsg TEXT: a line through the kernel log.  The kernel prints its console
# by polling the UART, so this gets out even when a tty writer is stuck.
kmsg() { echo "$*" >/dev/kmsg; }

# stuck_guard NAME TIMEOUT (in the background while a test runs): a test
# still running CGPU_STUCK_GRACE seconds past its timeout has a task the
# KILL could not end, or output that cannot reach the console; its pipe
# never closes and the run would wait for ever.  Report what the CPUs and
# the blocked tasks are doing (sysrq l and w) through the kernel log, fail
# the test and stop the guest: the host then reports the crash.
stuck_guard() {
	local g=${CGPU_STUCK_GRACE:-60} s
	# Killed when the test ends: the sleep goes too.
	trap 'kill $s 2>/dev/null; exit 0' TERM
	sleep $(($2 + g)) &
	s=$!
	wait $s
	trap - TERM
	dmesg -n 8
	kmsg "vm: $1 still running $g s past its ${2}s timeout: stuck"
	echo l >/proc/sysrq-trigger
	echo w >/proc/sysrq-trigger
	ps -o pid,ppid,stat,args 2>/dev/null | while IFS= read -r l; do kmsg "ps| $l"; done
	kmsg "vm: console: $(grep '^0:' /proc/tty/driver/serial 2>/dev/null)"
	# A bare line, as the host counts results from the line start.
	echo N >/sys/module/printk/parameters/time 2>/dev/null
	kmsg "--- FAIL: $1 (stuck past its ${2}s timeout; sysrq l and w above)"
	sync
	poweroff -f
}

run_test() { # SUITE FILE
	local name t start rc dur reason guard
	name="$1/$(basename "$2" .sh)"
	t=$(test_timeout "$2")
	echo "=== RUN   $name"
	rm -f /tmp/test.rc /tmp/test.skip /tmp/test.out
	start=$(uptime_cs)
	stuck_guard "$name" "$t" &
	guard=$!
	(
		cd /tmp || exit 1
		CGPU_SKIP_FILE=/tmp/test.skip timeout -s KILL "$t" "$2" </dev/null 2>&1
		echo $? >/tmp/test.rc
	) | tee /tmp/test.out | sed 's/^/    /'
	kill "$guard" 2>/dev/null
	dur=$(elapsed "$start")
	rc=$(cat /tmp/test.rc 2>/dev/null || echo 1)
	if ! klog_check "after $name"; then
		result FAIL "$name" "${dur}s, kernel log"
		return
	fi
	case $rc in
	0) result PASS "$name" "${dur}s" ;;
	77)
		reason=$(cat /tmp/test.skip 2>/dev/null || grep -v '^ *$' /tmp/test.out | tail -1)
		result SKIP "$name" "${reason:-no reason given}"
		;;
	*)
		if awk -v d="$dur" -v t="$t" 'BEGIN { exit !(d + 0.5 >= t) }'; then
			echo "    timed out after ${t}s"
		fi
		result FAIL "$name" "${dur}s, exit $rc"
		;;
	esac
}

run_suites() {
	local s f ran
	for s in $CGPU_SUITES; do
		ran=0
		for f in "$CGPU/suites/$s"/*.sh; do
			[ -f "$f" ] || continue # no match: the glob itself
			ran=1
			if [ ! -x "$f" ]; then
				result FAIL "$s/$(basename "$f" .sh)" "not executable"
				continue
			fi
			run_test "$s" "$f"
		done
		[ "$ran" = 1 ] || result FAIL "$s" "the suite has no *.sh test"
	done
	if [ "$CGPU_KMEMLEAK" = 1 ]; then
		echo "=== RUN   kernel/kmemleak"
		local start
		start=$(uptime_cs)
		if kmemleak_check && klog_check "after the kmemleak scan"; then
			result PASS kernel/kmemleak "$(elapsed "$start")s"
		else
			result FAIL kernel/kmemleak "$(elapsed "$start")s"
		fi
	fi
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ]
}

run_exec() {
	local rc=0 cmd
	cmd=$(cat "$CGPU/cmd")
	(cd /tmp && sh -c "$cmd" </dev/null 2>&1) || rc=$?
	kmemleak_check || echo "@@CGPU-KLOG-BAD@@"
	klog_check "after the command" || echo "@@CGPU-KLOG-BAD@@"
	return "$rc"
}

main() {
	local rc=0
	# First sign of life: the host tells a kernel that hung before /init
	# from a failure of ours by this line.
	echo "@@CGPU-INIT@@"
	mounts
	# For the host's report of a guest that stopped printing: where the
	# kernel's text is (KASLR), and every sysrq key allowed.
	echo "@@CGPU-TEXT $(sed -n 's/^\([0-9a-f]*\) T _text$/\1/p' /proc/kallsyms | head -1)@@"
	echo 1 >/proc/sys/kernel/sysrq
	[ "$CGPU_VERBOSE" = 1 ] || dmesg -n 1
	load_modules
	taint_seen=$(cat /proc/sys/kernel/tainted)
	klog_check "at boot and module load" || finish 125
	if [ "$CGPU_KMEMLEAK" = 1 ]; then
		echo clear >/sys/kernel/debug/kmemleak ||
			setup_failed "kmemleak is not available"
	fi
	echo "@@CGPU-BEGIN@@"
	case $CGPU_MODE in
	exec) run_exec || rc=$? ;;
	suite) run_suites || rc=$? ;;
	*) setup_failed "unknown mode $CGPU_MODE" ;;
	esac
	finish "$rc"
}

main
