#!/bin/sh
# Tasks in no attached cgroup are untouched: they allocate past any
# instance's limit, see the real card and keep managed memory.
. /opt/cgpu/lib.sh
. "$(dirname "$0")/helpers.inc"

instance t1 0 1M t_a
mkcg t_free
for cg in - t_free; do
	fc_in "$cg" 0 alloc 1G alloc 3M meminfo managed 2M
	assert_eq "$CARD" "$(val total '^meminfo')" "total outside"
done
expect_used t1 0 "nothing charged"
assert_eq 0 "$(stat_of t1 allocs)" "no allocation counted"
expect_idle "at the end"
