// Package stats holds the one percentile definition the benchmarks report,
// so that the p50 and p99 figures they print, and the README compares, are
// computed alike.
package stats

import (
	"cmp"
	"fmt"
	"slices"
)

// Percentile is the nearest-rank p-th percentile of samples, p in 1..100:
// the smallest sample that at least p percent of the samples are at or
// below, that is the ceil(p*n/100)-th smallest of n. It is always one of
// the samples (no interpolation), p 100 is the largest, and samples is
// not reordered. No samples give the zero value; p outside 1..100 panics.
func Percentile[T cmp.Ordered](samples []T, p int) T {
	if p < 1 || p > 100 {
		panic(fmt.Sprintf("stats.Percentile: p %d outside 1..100", p))
	}
	var zero T
	n := len(samples)
	if n == 0 {
		return zero
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[(p*n+99)/100-1]
}
