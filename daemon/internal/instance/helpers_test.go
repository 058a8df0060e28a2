package instance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

const gib = uint64(1) << 30

// fakeFilter is an in-memory DeviceFilter. Like devfilter, it calls a
// filter stale (built with device numbers the host no longer has) from
// makeStale until it is applied again.
type fakeFilter struct {
	mu       sync.Mutex
	pinned   map[uint64][]uint32
	paths    map[uint64]string
	stale    map[uint64]bool
	staleErr error
	applyErr map[uint64]error // Apply of the cgroup fails with it
}

func newFakeFilter() *fakeFilter {
	return &fakeFilter{pinned: map[uint64][]uint32{}, paths: map[uint64]string{}, stale: map[uint64]bool{}, applyErr: map[uint64]error{}}
}

func (f *fakeFilter) Apply(_ context.Context, path string, id uint64, minors []uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.applyErr[id]; err != nil {
		return err
	}
	f.pinned[id] = slices.Clone(minors)
	f.paths[id] = path
	delete(f.stale, id)
	return nil
}

func (f *fakeFilter) Remove(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pinned, id)
	delete(f.paths, id)
	delete(f.stale, id)
	return nil
}

func (f *fakeFilter) Stale(context.Context) ([]uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.staleErr != nil {
		return nil, f.staleErr
	}
	var ids []uint64
	for id := range f.stale {
		if _, ok := f.pinned[id]; ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// makeStale marks every pinned filter stale, with what it allows replaced
// by sentinel so that a filter applied again shows.
func (f *fakeFilter) makeStale(sentinel []uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.pinned {
		f.stale[id] = true
		f.pinned[id] = slices.Clone(sentinel)
	}
}

func (f *fakeFilter) Pinned(context.Context) ([]uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []uint64
	for id := range f.pinned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (f *fakeFilter) get(id uint64) ([]uint32, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.pinned[id]
	return m, ok
}

// world is one node: a cgroup tree in a tmp dir, a fake kernel, a fake
// filter, a state dir and an inventory.
type world struct {
	t      *testing.T
	root   string // cgroup mount
	cg     *cgroup.Resolver
	kern   *kernel.Fake
	filter *fakeFilter
	store  *state.Store
	inv    gpu.Inventory
	log    *logtest.Hook
	logger *logrus.Logger
}

func acceptAll(string) error { return nil }

// newWorld has ngpu GPUs of mem bytes each (indices 0.., minors 0..).
func newWorld(t *testing.T, ngpu int, mem uint64) *world {
	t.Helper()
	w := &world{t: t, root: t.TempDir(), kern: kernel.NewFake(), filter: newFakeFilter()}
	w.cg = cgroup.New(cgroup.WithRoot(w.root), cgroup.WithFSCheck(acceptAll))
	w.inv = gpu.Inventory{DriverVersion: "550.54.15", Source: "procfs"}
	for i := range ngpu {
		w.inv.GPUs = append(w.inv.GPUs, gpu.GPU{
			Index: i, Minor: uint32(i), UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i),
			Name: "Mock GPU", BusID: fmt.Sprintf("0000:%02x:00.0", i+1), MemoryTotal: mem,
		})
	}
	s, err := state.Open(state.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w.store = s
	w.logger, w.log = logtest.NewNullLogger()
	w.logger.SetLevel(logrus.DebugLevel)
	return w
}

// cgroup makes a container cgroup directory and returns its relative path.
func (w *world) cgroup(name string) string {
	w.t.Helper()
	rel := "/kubepods/" + name
	if err := os.MkdirAll(filepath.Join(w.root, rel), 0o755); err != nil {
		w.t.Fatal(err)
	}
	return rel
}

func (w *world) rmCgroup(rel string) {
	w.t.Helper()
	if err := os.Remove(filepath.Join(w.root, rel)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) opts(extra ...Option) []Option {
	return append([]Option{
		WithKernel(w.kern), WithInventory(w.inv), WithStore(w.store), WithDeviceFilter(w.filter),
		WithCgroups(w.cg), WithLogger(w.logger), WithSweep(time.Hour), WithNode("node-a", "192.0.2.10"),
		WithClock(func() time.Time { return time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC) }),
	}, extra...)
}

// manager returns a reconciled Manager on the world.
func (w *world) manager(extra ...Option) *Manager {
	w.t.Helper()
	m, err := New(w.opts(extra...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { m.Close() })
	if err := m.Reconcile(context.Background()); err != nil {
		w.t.Fatalf("Reconcile: %v", err)
	}
	return m
}

func (w *world) kernelInstances() map[string]kernel.Stats {
	w.t.Helper()
	ctx := context.Background()
	ids, err := w.kern.List(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]kernel.Stats{}
	for _, id := range ids {
		st, err := w.kern.Stats(ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		out[st.Name] = st
	}
	return out
}

func (w *world) records() []state.Record {
	w.t.Helper()
	if err := w.store.Sync(context.Background()); err != nil {
		w.t.Fatal(err)
	}
	recs, err := w.store.List(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// checkClean asserts the invariant: every record is ready and complete
// (kernel instances with its name, limit and weight, attached; its filter
// pinned with its GPUs), and nothing exists that no record claims. It
// returns the records.
func (w *world) checkClean(m *Manager) []state.Record {
	w.t.Helper()
	recs := w.records()
	kin := w.kernelInstances()
	pinned, _ := w.filter.Pinned(context.Background())
	slots := 0
	for _, r := range recs {
		if r.State != state.StateReady {
			w.t.Errorf("record %s is %s", r.Name, r.State)
		}
		for _, s := range r.Slots {
			slots++
			st, ok := kin[kernelName(r.Name, s.GPU)]
			switch {
			case !ok:
				w.t.Errorf("record %s: no kernel instance on GPU %d", r.Name, s.GPU)
			case st.ID != s.KernelID || st.MemLimit != r.Memory || st.Weight != r.Weight || st.Cgroups != 1 || st.GPU != s.Minor:
				w.t.Errorf("record %s slot %+v: kernel has %+v", r.Name, s, st)
			}
		}
		mins, ok := w.filter.get(r.CgroupID)
		if !ok || !slices.Equal(mins, minors(r)) {
			w.t.Errorf("record %s: filter %v (pinned %v), want %v", r.Name, mins, ok, minors(r))
		}
	}
	if len(kin) != slots {
		w.t.Errorf("%d kernel instances, %d claimed by records: %v", len(kin), slots, kin)
	}
	if len(pinned) != len(recs) {
		w.t.Errorf("%d filters pinned, %d records", len(pinned), len(recs))
	}
	if m != nil {
		got, err := m.ListInstances(context.Background(), "")
		if err != nil || len(got) != len(recs) {
			w.t.Errorf("Manager lists %d instances (%v), store has %d", len(got), err, len(recs))
		}
		// Accounting matches the records.
		want := map[int]gpuLoad{}
		for _, r := range recs {
			for _, s := range r.Slots {
				l := want[s.GPU]
				l.n++
				l.mem += r.Memory
				l.weight += r.Weight
				want[s.GPU] = l
			}
		}
		m.mu.Lock()
		for _, g := range w.inv.GPUs {
			if got := *m.loadOf(g.Index); got != want[g.Index] {
				w.t.Errorf("GPU %d accounting %+v, want %+v", g.Index, got, want[g.Index])
			}
		}
		m.mu.Unlock()
	}
	return recs
}

func names(ins []v1.Instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Name)
	}
	sort.Strings(out)
	return out
}

func isKind(err, kind error) bool { return err != nil && errors.Is(err, kind) }

func cgroupGoneOf(m *Manager, name string) cgroup.Gone {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.byName[name]
	if e == nil {
		return cgroup.Gone{}
	}
	return cgroup.Gone{ID: e.rec.CgroupID, Path: e.rec.Cgroup, By: "test"}
}
