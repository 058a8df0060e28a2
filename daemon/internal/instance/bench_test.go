package instance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
	"github.com/cgpu-dev/cgpu/internal/stats"
)

// benchDir is where the benchmarks' state file goes: it must be a real
// disk for fsync to cost what it costs (CGPU_BENCH_DIR, default a tmp dir).
func benchDir(b *testing.B) string {
	if d := os.Getenv("CGPU_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "cgpu-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, what string) {
	if len(l.d) == 0 {
		return
	}
	q := func(p int) float64 { return float64(stats.Percentile(l.d, p).Microseconds()) }
	b.ReportMetric(q(50), what+"-p50-µs")
	b.ReportMetric(q(99), what+"-p99-µs")
}

// BenchmarkFsyncWrite is the floor: one durable write of a new record,
// the write a create waits for.
func BenchmarkFsyncWrite(b *testing.B) {
	s, err := state.Open(state.WithDir(benchDir(b)))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rec := state.Record{Name: "x", Cgroup: "/kubepods/x", Memory: gib, Slots: []state.Slot{{GPU: 0}}, State: state.StateReady}
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.Name = fmt.Sprint("x", i)
		t0 := time.Now()
		if err := s.Put(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(t0))
	}
	lat.report(b, "write")
}

func benchManager(b *testing.B, cgroups int) (*Manager, []string) {
	root := b.TempDir()
	var rels []string
	for i := range cgroups {
		rel := fmt.Sprintf("/kubepods/c%d", i)
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			b.Fatal(err)
		}
		rels = append(rels, rel)
	}
	inv := gpu.Inventory{}
	for i := range 4 {
		inv.GPUs = append(inv.GPUs, gpu.GPU{Index: i, Minor: uint32(i), UUID: fmt.Sprint("GPU-", i), MemoryTotal: 80 * gib})
	}
	s, err := state.Open(state.WithDir(benchDir(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	m, err := New(WithKernel(kernel.NewFake()), WithInventory(inv), WithStore(s), WithDeviceFilter(newFakeFilter()),
		WithCgroups(cgroup.New(cgroup.WithRoot(root), cgroup.WithFSCheck(acceptAll))), WithPlacement(v1.PlacementSpread))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	if err := m.Reconcile(context.Background()); err != nil {
		b.Fatal(err)
	}
	return m, rels
}

func roundTrip(b *testing.B, m *Manager, rel, name string, lat *latencies) {
	ctx := context.Background()
	t0 := time.Now()
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: name, Cgroup: rel, Memory: gib}); err != nil {
		b.Fatal(err)
	}
	lat.add(time.Since(t0))
	if err := m.DestroyInstance(ctx, name, false); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCreateDestroy: create+destroy round trips through the Manager
// (fake kernel, real bbolt with fsync), one client.
func BenchmarkCreateDestroy(b *testing.B) {
	m, rels := benchManager(b, 1)
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		roundTrip(b, m, rels[0], "seq", &lat)
	}
	lat.report(b, "create")
}

// BenchmarkCreateDestroy32: the same with 32 clients at once, on 32
// cgroups; group commit lets them share fsyncs.
func BenchmarkCreateDestroy32(b *testing.B) {
	const clients = 32
	m, rels := benchManager(b, clients)
	var lat latencies
	var next atomic.Int64
	b.SetParallelism((clients + 1) / max(1, runtimeProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)-1) % clients
		name := fmt.Sprint("par", i)
		for pb.Next() {
			roundTrip(b, m, rels[i], name, &lat)
		}
	})
	lat.report(b, "create")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
