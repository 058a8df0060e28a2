# shellcheck shell=sh
# Helpers for test scripts in the VM guest; packed at /opt/cgpu/lib.sh.
#   . /opt/cgpu/lib.sh
# A test exits 0 to pass, 77 to skip (skip REASON), anything else to fail.

CGPU_MODULES=/opt/cgpu/modules
NVMOCK_DEBUGFS=/sys/kernel/debug/nvmock

# fail MSG: print MSG and end the test as failed.
fail() {
	echo "FAIL: $*"
	exit 1
}

# skip REASON: print REASON and end the test as skipped (exit 77).
skip() {
	echo "SKIP: $*"
	if [ -n "${CGPU_SKIP_FILE:-}" ]; then
		echo "$*" >"$CGPU_SKIP_FILE"
	fi
	exit 77
}

# wait_for SECONDS CMD...: poll CMD (every 0.1 s) until it succeeds; fail
# if it has not within SECONDS.  For "until the state is reached": a test
# proves a change by waiting for it, never by a fixed sleep.
wait_for() {
	_wf_t=$1
	shift
	_wf_i=0
	until "$@"; do
		_wf_i=$((_wf_i + 1))
		[ "$_wf_i" -le $((_wf_t * 10)) ] || fail "not within ${_wf_t} s: $*"
		sleep 0.1
	done
}

# assert_eq WANT GOT MSG: fail unless WANT and GOT are the same string.
assert_eq() {
	if [ "$1" != "$2" ]; then
		fail "$3: want '$1', got '$2'"
	fi
}

# nvmock_counter PATH: print /sys/kernel/debug/nvmock/PATH.
nvmock_counter() {
	[ -r "$NVMOCK_DEBUGFS/$1" ] || fail "no nvmock counter $NVMOCK_DEBUGFS/$1"
	cat "$NVMOCK_DEBUGFS/$1"
}

module_loaded() {
	[ -d "/sys/module/$1" ]
}

# reload_nvmock [PARAMS...]: reload nvmock.ko with PARAMS; cgpu.ko, which
# sits on top of it, is unloaded first and loaded again after.
reload_nvmock() {
	_cgpu_was_loaded=0
	if module_loaded cgpu; then
		_cgpu_was_loaded=1
		rmmod cgpu || fail "rmmod cgpu"
	fi
	if module_loaded nvmock; then
		rmmod nvmock || fail "rmmod nvmock"
	fi
	insmod "$CGPU_MODULES/nvmock.ko" "$@" || fail "insmod nvmock.ko $*"
	if [ "$_cgpu_was_loaded" = 1 ]; then
		insmod "$CGPU_MODULES/cgpu.ko" || fail "insmod cgpu.ko"
	fi
}
