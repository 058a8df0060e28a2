#!/bin/sh
# The cuInit-like sequence works on both default GPUs, with both RM_ALLOC
# forms, and names the right GPU; a third GPU does not exist.
# vm-timeout: 600
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

expect_idle "at start"
for g in 0 1; do
	for form in nvos64 nvos21; do
		fc 0 -g $g --alloc-form $form init
		assert_eq "$g" "$(val gpu '^init: OK')" "gpu index"
		assert_eq "$g" "$(val minor '^init: OK')" "minor of GPU $g"
		assert_eq "0x$((g + 1))00" "$(val gpu_id '^init: OK')" "gpu_id of GPU $g"
		assert_eq "GPU-6e766d6f-636b-4000-8000-00000000000$g" \
			"$(val uuid '^init: OK')" "UUID of GPU $g"
		assert_eq "$VERSION" "$(val version '^init: OK')" "driver version"
		case $(val client '^init: OK') in
		0xc1d0*) ;;
		*) fail "client handle $(val client '^init: OK') is not driver-generated (0xc1d0....)" ;;
		esac
	done
done
expect_idle "after init runs"

fc 1 -g 2 init
expect_line "no GPU 2: CARD_INFO lists 2"
expect_idle "after a failed init"

# A held context is one client; its exit ends it.
start_hold -g 1
expect_counters "while holding an initialised context" 1 0 0 0 1 0 0
stop_hold
expect_idle "after kill -9"
