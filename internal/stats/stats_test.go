package stats

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	for _, c := range []struct {
		name    string
		samples []int
		p, want int
	}{
		{"one sample", []int{7}, 99, 7},
		{"one sample p1", []int{7}, 1, 7},
		{"p50 of two is the lower", []int{2, 1}, 50, 1},
		{"p51 of two is the upper", []int{2, 1}, 51, 2},
		{"p50 of four", []int{4, 3, 2, 1}, 50, 2},
		{"p99 of 100 is the 99th", hundred, 99, 99},
		{"p100 is the largest", hundred, 100, 100},
		{"p1 of 100 is the smallest", hundred, 1, 1},
		{"p99 of 10 is the largest", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p90 of 10", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
		{"ties", []int{5, 5, 1, 5}, 50, 5},
	} {
		if got := Percentile(c.samples, c.p); got != c.want {
			t.Errorf("%s: Percentile(%v, %d) = %d, want %d", c.name, c.samples, c.p, got, c.want)
		}
	}
}

func TestPercentileLeavesSamplesAlone(t *testing.T) {
	d := []time.Duration{3, 1, 2}
	if got := Percentile(d, 50); got != 2 {
		t.Errorf("p50 = %v, want 2", got)
	}
	if d[0] != 3 || d[1] != 1 || d[2] != 2 {
		t.Errorf("samples reordered: %v", d)
	}
	if got := Percentile([]time.Duration(nil), 99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

func TestPercentileRefusesOutOfRangeP(t *testing.T) {
	for _, p := range []int{0, -1, 101} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Percentile(_, %d) did not panic", p)
				}
			}()
			Percentile([]int{1}, p)
		}()
	}
}
