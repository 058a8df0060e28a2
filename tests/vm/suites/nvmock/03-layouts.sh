#!/bin/sh
# Size rounding (docs/nvidia-abi.md 10.11) and accounting under every layout
# generation of the driver (NV_MEMORY_ALLOCATION_PARAMS 120/128 B,
# FB_GET_INFO_V2 436/1028 B, MAP_EXTERNAL 1200/9264 B, UVM_FREE 24/16 B),
# with both RM_ALLOC forms.
# vm-timeout: 900
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

ONE=65536      # 1 B    -> 0x10000
HUNDREDK=131072 # 100 KiB -> 0x20000
THREEM=4194304 # 3 MiB  -> 0x400000
SUM=$((ONE + HUNDREDK + THREEM))

for version in 535.104.05 550.54.14 580.95.05 595.45.04; do
	reload_nvmock version=$version
	for form in nvos64 nvos21; do
		echo "### version $version, $form"
		fc 0 --alloc-form $form alloc 1 alloc 100K alloc 3M meminfo \
			legacy-alloc 1 legacy-info free all meminfo
		assert_eq "$version" "$(val version '^init: OK')" "version seen by fakecuda"
		assert_eq "$ONE" "$(val size '^alloc 1:')" "$version $form: size of a 1 B allocation"
		assert_eq "$HUNDREDK" "$(val size '^alloc 100K:')" "$version $form: size of 100 KiB"
		assert_eq "$THREEM" "$(val size '^alloc 3M:')" "$version $form: size of 3 MiB"
		assert_eq "$ONE" "$(val size '^legacy-alloc 1:')" "$version: VID_HEAP size of 1 B"
		assert_eq "$CARD" "$(nth_val 1 total '^meminfo:')" "$version: meminfo total"
		assert_eq "$((CARD - SUM))" "$(nth_val 1 free '^meminfo:')" "$version: meminfo free with 3 allocations"
		assert_eq "$((CARD - SUM - ONE))" "$(val free '^legacy-info:')" "$version: VID_HEAP INFO free"
		assert_eq "$CARD" "$(val total '^legacy-info:')" "$version: VID_HEAP INFO total"
		assert_eq "$CARD" "$(nth_val 2 free '^meminfo:')" "$version: meminfo free after free all"
		expect_line "^free all: OK freed=4$"
		expect_idle "$version $form: after exit"

		start_hold --alloc-form $form alloc 1 alloc 100K alloc 3M
		expect_counters "$version $form: holding 3 allocations" 1 0 $SUM 3 1 0 0
		stop_hold
		expect_idle "$version $form: after kill -9"

		# UVM_FREE in this layout drops the UVM mapping's reference.
		start_hold --alloc-form $form alloc 3M alloc 1 free all
		expect_counters "$version $form: holding after free all" 1 0 0 0
		stop_hold
	done
done
reload_nvmock
expect_idle "at the end"
