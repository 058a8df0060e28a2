package instance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// errCrashed is what every call gets once the simulated process is dead.
var errCrashed = errors.New("simulated crash")

// crash counts the changes a Manager makes (kernel, filter and store
// writes) and kills the process at change number at: that change and
// everything after it never happen. Reads fail too once dead.
type crash struct {
	mu    sync.Mutex
	at    int // 0: never
	steps int
	dead  bool
	trace []string
}

func (c *crash) step(what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errCrashed
	}
	c.steps++
	c.trace = append(c.trace, what)
	if c.at > 0 && c.steps >= c.at {
		c.dead = true
		return errCrashed
	}
	return nil
}

func (c *crash) read() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errCrashed
	}
	return nil
}

type crashKernel struct {
	kernel.Client
	c *crash
}

func (k crashKernel) Version(ctx context.Context) (kernel.Version, error) {
	if err := k.c.read(); err != nil {
		return kernel.Version{}, err
	}
	return k.Client.Version(ctx)
}

func (k crashKernel) Create(ctx context.Context, req kernel.CreateRequest) (uint64, error) {
	if err := k.c.step("kernel create " + req.Name); err != nil {
		return 0, err
	}
	return k.Client.Create(ctx, req)
}

func (k crashKernel) Destroy(ctx context.Context, id uint64, force bool) error {
	if err := k.c.step(fmt.Sprint("kernel destroy ", id)); err != nil {
		return err
	}
	return k.Client.Destroy(ctx, id, force)
}

func (k crashKernel) Attach(ctx context.Context, id, cg uint64) error {
	if err := k.c.step(fmt.Sprint("kernel attach ", id)); err != nil {
		return err
	}
	return k.Client.Attach(ctx, id, cg)
}

func (k crashKernel) Detach(ctx context.Context, id, cg uint64) error {
	if err := k.c.step(fmt.Sprint("kernel detach ", id)); err != nil {
		return err
	}
	return k.Client.Detach(ctx, id, cg)
}

func (k crashKernel) SetLimit(ctx context.Context, id, limit uint64) error {
	if err := k.c.step(fmt.Sprint("kernel set limit ", id)); err != nil {
		return err
	}
	return k.Client.SetLimit(ctx, id, limit)
}

func (k crashKernel) SetWeight(ctx context.Context, id uint64, weight uint32) error {
	if err := k.c.step(fmt.Sprint("kernel set weight ", id)); err != nil {
		return err
	}
	return k.Client.SetWeight(ctx, id, weight)
}

func (k crashKernel) Stats(ctx context.Context, id uint64) (kernel.Stats, error) {
	if err := k.c.read(); err != nil {
		return kernel.Stats{}, err
	}
	return k.Client.Stats(ctx, id)
}

func (k crashKernel) List(ctx context.Context) ([]uint64, error) {
	if err := k.c.read(); err != nil {
		return nil, err
	}
	return k.Client.List(ctx)
}

type crashFilter struct {
	f DeviceFilter
	c *crash
}

func (f crashFilter) Apply(ctx context.Context, path string, id uint64, minors []uint32) error {
	if err := f.c.step(fmt.Sprint("filter apply ", id)); err != nil {
		return err
	}
	return f.f.Apply(ctx, path, id, minors)
}

func (f crashFilter) Remove(ctx context.Context, id uint64) error {
	if err := f.c.step(fmt.Sprint("filter remove ", id)); err != nil {
		return err
	}
	return f.f.Remove(ctx, id)
}

func (f crashFilter) Pinned(ctx context.Context) ([]uint64, error) {
	if err := f.c.read(); err != nil {
		return nil, err
	}
	return f.f.Pinned(ctx)
}

func (f crashFilter) Stale(ctx context.Context) ([]uint64, error) {
	if err := f.c.read(); err != nil {
		return nil, err
	}
	return f.f.Stale(ctx)
}

type crashStore struct {
	s *state.Store
	c *crash
}

func failed(err error) <-chan error {
	ch := make(chan error, 1)
	ch <- err
	return ch
}

func (s crashStore) Put(ctx context.Context, rec state.Record) error {
	if err := s.c.step("store put " + rec.Name + " " + rec.State); err != nil {
		return err
	}
	return s.s.Put(ctx, rec)
}

func (s crashStore) PutNoWait(rec state.Record) <-chan error {
	if err := s.c.step("store put (no wait) " + rec.Name + " " + rec.State); err != nil {
		return failed(err)
	}
	return s.s.PutNoWait(rec)
}

func (s crashStore) Delete(ctx context.Context, name string) error {
	if err := s.c.step("store delete " + name); err != nil {
		return err
	}
	return s.s.Delete(ctx, name)
}

func (s crashStore) DeleteNoWait(name string) <-chan error {
	if err := s.c.step("store delete (no wait) " + name); err != nil {
		return failed(err)
	}
	return s.s.DeleteNoWait(name)
}

func (s crashStore) List(ctx context.Context) ([]state.Record, error) {
	if err := s.c.read(); err != nil {
		return nil, err
	}
	return s.s.List(ctx)
}

func (s crashStore) Sync(ctx context.Context) error {
	if err := s.c.read(); err != nil {
		return err
	}
	return s.s.Sync(ctx)
}

// crashingManager is a Manager on w whose every change goes through c.
func crashingManager(t *testing.T, w *world, c *crash) *Manager {
	t.Helper()
	m, err := New(w.opts(WithKernel(crashKernel{w.kern, c}), WithDeviceFilter(crashFilter{w.filter, c}), withRecordStore(crashStore{w.store, c}))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// scenario is one operation to interrupt: setup runs on a healthy Manager,
// op on the crashing one.
type scenario struct {
	name  string
	setup func(t *testing.T, w *world, m *Manager)
	op    func(ctx context.Context, w *world, m *Manager) error
	// outcomes: the instance counts a repaired node may have.
	outcomes []int
}

func create2(ctx context.Context, w *world, m *Manager) error {
	_, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "x", ContainerID: "cx", Cgroup: "/kubepods/x", Memory: gib, Weight: 2, GPUs: []string{"0", "1"}})
	return err
}

func setupX(t *testing.T, w *world, m *Manager) {
	if err := create2(context.Background(), w, m); err != nil {
		t.Fatal(err)
	}
}

// failingFilter refuses to apply, so a create must undo its kernel work.
type failingFilter struct{ DeviceFilter }

func (failingFilter) Apply(context.Context, string, uint64, []uint32) error {
	return errors.New("bpf: no space")
}

var scenarios = []scenario{
	{name: "create on two GPUs", op: create2, outcomes: []int{0, 1}},
	{name: "create undone after the filter fails", op: func(ctx context.Context, w *world, m *Manager) error {
		m.filter = crashFilter{failingFilter{w.filter}, m.filter.(crashFilter).c}
		return create2(ctx, w, m)
	}, outcomes: []int{0}},
	{name: "destroy", setup: setupX, op: func(ctx context.Context, w *world, m *Manager) error {
		return m.DestroyInstance(ctx, "x", false)
	}, outcomes: []int{0, 1}},
	{name: "forced destroy of a busy instance", setup: func(t *testing.T, w *world, m *Manager) {
		setupX(t, w, m)
		in, _ := m.GetInstance(context.Background(), "x")
		w.kern.SetUsage(in.GPUs[1].KernelID, gib/2, 1)
	}, op: func(ctx context.Context, w *world, m *Manager) error {
		return m.DestroyInstance(ctx, "x", true)
	}, outcomes: []int{0, 1}},
	{name: "refused destroy of a busy instance", setup: func(t *testing.T, w *world, m *Manager) {
		setupX(t, w, m)
		in, _ := m.GetInstance(context.Background(), "x")
		// Busy on the second GPU only, and seen only by the kernel's
		// destroy (the Manager's own check reads the first GPU's stats
		// first): the first GPU's instance is destroyed, then made again.
		w.kern.SetUsage(in.GPUs[1].KernelID, gib/2, 1)
	}, op: func(ctx context.Context, w *world, m *Manager) error {
		m.kernel = statsBlind{m.kernel}
		return m.DestroyInstance(ctx, "x", false)
	}, outcomes: []int{1}},
	{name: "resize", setup: setupX, op: func(ctx context.Context, w *world, m *Manager) error {
		mem, wt := 3*gib, uint32(4)
		_, err := m.ResizeInstance(ctx, "x", v1.ResizeRequest{Memory: &mem, Weight: &wt})
		return err
	}, outcomes: []int{1}},
	{name: "module reloaded", setup: setupX, op: func(ctx context.Context, w *world, m *Manager) error {
		w.kern.Reset() // the repairing start makes both kernel instances again
		return nil
	}, outcomes: []int{1}},
	{name: "cgroup removed", setup: setupX, op: func(ctx context.Context, w *world, m *Manager) error {
		w.rmCgroup("/kubepods/x")
		m.cgroupGone(ctx, cgroupGoneOf(m, "x"))
		return nil
	}, outcomes: []int{0}},
}

// statsBlind hides memory use from Stats, so only Destroy sees it.
type statsBlind struct{ kernel.Client }

func (k statsBlind) Stats(ctx context.Context, id uint64) (kernel.Stats, error) {
	st, err := k.Client.Stats(ctx, id)
	st.MemUsed = 0
	return st, err
}

// TestCrashAtEveryStep kills each operation at each of its changes, then
// kills the repairing start at each of its changes too, and checks that a
// final start leaves a clean node: no kernel instance, filter or record
// without the others, and the instance either whole or gone.
func TestCrashAtEveryStep(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for k := 1; ; k++ {
				done := runCrash(t, sc, k)
				if done {
					t.Logf("%d crash points in the operation, each followed by a repair killed at each of its own", k-1)
					break
				}
				if k > 50 {
					t.Fatal("operation never completes")
				}
			}
		})
	}
}

// runCrash runs sc crashing at change k of the operation, then repairs
// with reconciles crashing at each step; it says whether the operation ran
// to its end without reaching change k.
func runCrash(t *testing.T, sc scenario, k int) bool {
	t.Helper()
	ctx := context.Background()
	completed := false
	for j := 1; ; j++ {
		w := newWorld(t, 2, 16*gib)
		w.cgroup("x")
		if sc.setup != nil {
			sc.setup(t, w, w.manager())
		}
		c := &crash{}
		m := crashingManager(t, w, c)
		if err := m.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.at = c.steps + k
		c.mu.Unlock()
		sc.op(ctx, w, m)
		trace := fmt.Sprint(c.trace)
		if !c.dead {
			completed = true
		}
		// A first repair, itself killed at its change j.
		c2 := &crash{at: j}
		r := crashingManager(t, w, c2)
		r.Reconcile(ctx)
		// The final start.
		final := w.manager()
		recs := w.checkClean(final)
		if !containsInt(sc.outcomes, len(recs)) {
			t.Errorf("crash at %d (%s), repair killed at %d: %d instances left, want one of %v", k, trace, j, len(recs), sc.outcomes)
		}
		if t.Failed() {
			t.Fatalf("crash at change %d of %s; repair killed at change %d of %v", k, trace, j, c2.trace)
		}
		if !c2.dead {
			return completed
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
