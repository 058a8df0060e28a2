package instance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

func mustCreate(t *testing.T, m *Manager, req v1.CreateRequest) v1.Instance {
	t.Helper()
	in, err := m.CreateInstance(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestDestroyBusy(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	ctx := context.Background()
	w.cgroup("a")
	in := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: 4 * gib, GPUs: []string{"0", "1"}})
	w.kern.SetUsage(in.GPUs[1].KernelID, gib, 2)
	err := m.DestroyInstance(ctx, "a", false)
	if !isKind(err, ErrBusy) || !strings.Contains(err.Error(), "holds 1 GiB on GPU 1 in 2 processes") {
		t.Fatalf("destroy of a busy instance: %v", err)
	}
	w.checkClean(m)
	// Seen by the kernel only: the first GPU's instance is made again.
	m.kernel = statsBlind{w.kern}
	if err := m.DestroyInstance(ctx, "a", false); !isKind(err, ErrBusy) {
		t.Fatalf("destroy refused by the kernel: %v", err)
	}
	m.kernel = w.kern
	recs := w.checkClean(m)
	if len(recs) != 1 || recs[0].Slots[0].KernelID == in.GPUs[0].KernelID {
		t.Fatalf("records %+v: want GPU 0's instance made again", recs)
	}
	if got, _ := m.GetInstance(ctx, "a"); got.State != v1.StateReady || got.GPUs[0].KernelID != recs[0].Slots[0].KernelID {
		t.Fatalf("instance after a refused destroy: %+v", got)
	}
	if err := m.DestroyInstance(ctx, "a", true); err != nil {
		t.Fatalf("forced destroy: %v", err)
	}
	if recs := w.checkClean(m); len(recs) != 0 {
		t.Fatal("forced destroy left a record")
	}
	// The kernel keeps charges of a forced destroy; the GPU's room is ours
	// again all the same.
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: 16 * gib, GPUs: []string{"1"}})
}

func TestDestroyMissingKernelInstance(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	w.cgroup("a")
	in := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	if err := w.kern.Destroy(context.Background(), in.GPUs[0].KernelID, true); err != nil {
		t.Fatal(err)
	}
	if err := m.DestroyInstance(context.Background(), "a", false); err != nil {
		t.Fatalf("destroy with the kernel instance already gone: %v", err)
	}
	if recs := w.checkClean(m); len(recs) != 0 {
		t.Fatal("record left")
	}
}

func TestResize(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	ctx := context.Background()
	w.cgroup("a")
	w.cgroup("b")
	a := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: 4 * gib, GPUs: []string{"0", "1"}})
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: 8 * gib, GPUs: []string{"1"}})
	u64 := func(v uint64) *uint64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	tests := []struct {
		name string
		req  v1.ResizeRequest
		kind error
		msg  string
		mem  uint64
	}{
		{"nothing", v1.ResizeRequest{}, ErrInvalid, "give memory, weight or both", 4 * gib},
		{"zero memory", v1.ResizeRequest{Memory: u64(0)}, ErrInvalid, "memory: 0 bytes", 4 * gib},
		{"weight 0", v1.ResizeRequest{Weight: u32(0)}, ErrInvalid, "weight 0", 4 * gib},
		{"beyond the card", v1.ResizeRequest{Memory: u64(17 * gib)}, ErrInvalid, "16 GiB in all", 4 * gib},
		{"beyond the room on GPU 1", v1.ResizeRequest{Memory: u64(9 * gib)}, ErrNoSpace, "GPU 1 has 4 GiB unallocated", 4 * gib},
		{"weights", v1.ResizeRequest{Weight: u32(20)}, ErrNoSpace, "weights would sum to 21", 4 * gib},
		{"grow to the room", v1.ResizeRequest{Memory: u64(8 * gib), Weight: u32(5)}, nil, "", 8 * gib},
		{"below the use", v1.ResizeRequest{Memory: u64(gib)}, ErrBusy, "holds more than the new limit", 8 * gib},
		{"shrink", v1.ResizeRequest{Memory: u64(3 * gib)}, nil, "", 3 * gib},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "below the use" {
				w.kern.SetUsage(a.GPUs[1].KernelID, 2*gib, 1)
				defer w.kern.SetUsage(a.GPUs[1].KernelID, 0, 0)
			}
			got, err := m.ResizeInstance(ctx, "a", tc.req)
			if tc.kind != nil {
				if !isKind(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v with %q", err, tc.kind, tc.msg)
				}
			} else if err != nil || got.Memory != tc.mem {
				t.Fatalf("resize = %+v, %v", got, err)
			}
			recs := w.checkClean(m)
			if recs[0].Name != "a" || recs[0].Memory != tc.mem {
				t.Fatalf("record %+v, want memory %d", recs[0], tc.mem)
			}
		})
	}
	if _, err := m.ResizeInstance(ctx, "nope", v1.ResizeRequest{Weight: u32(2)}); !isKind(err, ErrNotFound) {
		t.Fatalf("resize of nothing: %v", err)
	}
	// The shrink gave the room back.
	w.cgroup("c")
	mustCreate(t, m, v1.CreateRequest{Name: "c", Cgroup: "/kubepods/c", Memory: 5 * gib, GPUs: []string{"1"}})
}

func TestViewsMergeKernelStats(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644)
	verFile := filepath.Join(t.TempDir(), "version")
	os.WriteFile(verFile, []byte("1.0.0\n"), 0o644)
	m := w.manager(WithModuleVersionFile(verFile))
	ctx := context.Background()
	w.cgroup("a")
	w.cgroup("b")
	a := mustCreate(t, m, v1.CreateRequest{Name: "a", ContainerID: "ctr-a", Cgroup: "/kubepods/a", Memory: 4 * gib, GPUs: []string{"0"}})
	mustCreate(t, m, v1.CreateRequest{Name: "b", ContainerID: "ctr-b", Cgroup: "/kubepods/b", Memory: 2 * gib, GPUs: []string{"0", "1"}})
	id := a.GPUs[0].KernelID
	w.kern.SetUsage(id, 3*gib, 2)
	w.kern.SetUsage(id, gib, 1)
	w.kern.SetRefused(id, 5, 1)
	got, err := m.GetInstance(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	g := got.GPUs[0]
	if g.Used != gib || g.Peak != 3*gib || g.Allocs != 1 || g.RefusedAllocs != 5 || g.RefusedManaged != 1 || g.Processes != 1 || got.ContainerID != "ctr-a" || !got.Created.Equal(time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("instance %+v", got)
	}
	if _, err := m.GetInstance(ctx, "zz"); !isKind(err, ErrNotFound) {
		t.Fatalf("GetInstance of nothing: %v", err)
	}
	list, _ := m.ListInstances(ctx, "ctr-b")
	if len(list) != 1 || list[0].Name != "b" {
		t.Fatalf("list of ctr-b: %v", names(list))
	}
	all, _ := m.ListInstances(ctx, "")
	if strings.Join(names(all), ",") != "a,b" {
		t.Fatalf("list: %v", names(all))
	}
	gpus, _ := m.GPUs(ctx)
	if gpus[0].MemoryAllocated != 6*gib || gpus[0].MemoryUsed != gib || gpus[0].Instances != 2 || gpus[1].MemoryAllocated != 2*gib || gpus[1].UUID != w.inv.GPUs[1].UUID {
		t.Fatalf("GPUs %+v", gpus)
	}
	ins, err := m.Inspect(ctx)
	if err != nil || ins.Node != "node-a" || ins.Address != "192.0.2.10" || len(ins.GPUs) != 2 || ins.GPUs[0] != (v1.InspectGPU{Index: 0, Allocated: 6 * gib, Total: 16 * gib, Used: gib}) || len(ins.Instances) != 2 {
		t.Fatalf("Inspect = %+v, %v", ins, err)
	}
	v, err := m.Version(ctx)
	if err != nil || v.API != "v1" || v.Module == nil || v.Module.Version != "1.0.0" || v.Module.MaxInst != 20 || v.Driver != (v1.Driver{Version: "550.54.15", Source: "procfs"}) {
		t.Fatalf("Version = %+v (%+v), %v", v, v.Module, err)
	}
	h := m.Health(ctx)
	if h.Status != "ok" || len(h.Checks) != 6 {
		t.Fatalf("Health = %+v", h)
	}
	w.kern.FailNext("version", &kernel.Error{Op: "version", Sentinel: kernel.ErrNoModule})
	if h := m.Health(ctx); h.Status != "degraded" || h.Checks[0].OK {
		t.Fatalf("Health with the kernel failing = %+v", h)
	}
}

func TestWithoutKernel(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	w.cgroup("a")
	m, err := New(w.opts(WithKernel(nil))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if err := m.Reconcile(ctx); !isKind(err, ErrUnavailable) {
		t.Fatalf("Reconcile without a kernel: %v", err)
	}
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib}); !isKind(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate) {
		t.Fatalf("create: %v", err)
	}
	if err := m.DestroyInstance(ctx, "a", false); !isKind(err, ErrUnavailable) {
		t.Fatalf("destroy: %v", err)
	}
	if v, err := m.Version(ctx); err != nil || v.Module != nil {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	if h := m.Health(ctx); h.Status != "degraded" {
		t.Fatalf("Health = %+v", h)
	}
	if _, err := New(WithKernel(w.kern)); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

// TestRunDestroysOnCgroupRemoval: removing a container's cgroup ends its
// instance, through inotify (the sweep is an hour away), and through the
// sweep when inotify missed it.
func TestRunDestroysOnCgroupRemoval(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	w.cgroup("a")
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: gib})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	w.rmCgroup("/kubepods/a")
	waitFor(t, func() bool { _, err := m.GetInstance(ctx, "a"); return isKind(err, ErrNotFound) })
	if recs := w.checkClean(m); len(recs) != 1 || recs[0].Name != "b" {
		t.Fatalf("records %+v", recs)
	}
	found := false
	for _, e := range w.log.AllEntries() {
		if e.Message == "cgroup gone; instance destroyed" && e.Data["instance"] == "a" && e.Data["noticed_by"] == "inotify" {
			found = true
		}
	}
	if !found {
		t.Fatal("no log line for the removal")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunSweepCatchesMissedRemoval(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager(WithSweep(20 * time.Millisecond))
	w.cgroup("a")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// An inotify event lost: the watch is gone when the cgroup goes, and
	// comes back (unable to watch a missing directory) only after.
	g := cgroupGoneOf(m, "a")
	m.watcher.Remove(g.ID)
	w.rmCgroup("/kubepods/a")
	if err := m.watcher.Add(g.ID, g.Path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := m.GetInstance(ctx, "a"); return isKind(err, ErrNotFound) })
	if recs := w.checkClean(m); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
	found := false
	for _, e := range w.log.AllEntries() {
		found = found || e.Message == "cgroup gone; instance destroyed" && e.Data["noticed_by"] == "sweep"
	}
	if !found {
		t.Fatal("no log line of the sweep's removal")
	}
	cancel()
	<-done
}

func TestReconcileDestroysWhenCgroupWentWhileDown(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	w.cgroup("a")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	m.Close()
	w.rmCgroup("/kubepods/a")
	m2 := w.manager()
	if recs := w.checkClean(m2); len(recs) != 0 {
		t.Fatalf("reconcile kept %+v", recs)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReconcileRepairs(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	for _, c := range []string{"ok", "gone", "reloaded", "resized"} {
		w.cgroup(c)
		mustCreate(t, m, v1.CreateRequest{Name: c, Cgroup: "/kubepods/" + c, Memory: 2 * gib, GPUs: []string{"0"}})
	}
	m.Close()
	byName := func(n string) state.Record {
		for _, r := range w.records() {
			if r.Name == n {
				return r
			}
		}
		t.Fatalf("no record %s", n)
		return state.Record{}
	}
	// While the daemon is down: a cgroup goes, a kernel instance goes (as
	// after a module reload), a limit changes, an orphan kernel instance and
	// a foreign one appear, a stray filter is left pinned.
	w.rmCgroup("/kubepods/gone")
	w.kern.Destroy(ctx, byName("reloaded").Slots[0].KernelID, true)
	w.kern.SetLimit(ctx, byName("resized").Slots[0].KernelID, 5*gib)
	orphan, _ := w.kern.Create(ctx, kernel.CreateRequest{Name: "old.1", GPU: 1, MemLimit: gib})
	busyOrphan, _ := w.kern.Create(ctx, kernel.CreateRequest{Name: "busy.1", GPU: 1, MemLimit: gib})
	w.kern.SetUsage(busyOrphan, 1, 1)
	foreign, _ := w.kern.Create(ctx, kernel.CreateRequest{Name: "admin-test", GPU: 1, MemLimit: gib})
	w.filter.Apply(ctx, "/x", 999999, []uint32{0})

	m2, err := New(w.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	kin := w.kernelInstances()
	if _, ok := kin["old.1"]; ok {
		t.Error("orphan kernel instance kept")
	}
	if _, ok := kin["busy.1"]; !ok {
		t.Error("orphan holding memory destroyed")
	}
	if _, ok := kin["admin-test"]; !ok {
		t.Error("foreign kernel instance destroyed")
	}
	if _, err := w.kern.Stats(ctx, orphan); err == nil {
		t.Error("orphan still there")
	}
	if _, ok := w.filter.get(999999); ok {
		t.Error("stray filter kept")
	}
	recs := w.records()
	var got []string
	for _, r := range recs {
		got = append(got, r.Name)
	}
	if strings.Join(got, ",") != "ok,reloaded,resized" {
		t.Fatalf("records %v", got)
	}
	if st := kin["resized.0"]; st.MemLimit != 2*gib {
		t.Errorf("resized limit %d, want the record's", st.MemLimit)
	}
	if st, ok := kin["reloaded.0"]; !ok || st.Cgroups != 1 || byName("reloaded").Slots[0].KernelID != st.ID {
		t.Errorf("reloaded: %+v %v", st, ok)
	}
	// Everything but the two leftovers is clean.
	w.kern.SetUsage(busyOrphan, 0, 0)
	w.kern.Destroy(ctx, busyOrphan, false)
	w.kern.Destroy(ctx, foreign, false)
	w.checkClean(m2)
	for _, want := range []string{
		"reconcile: cgroup gone; instance destroyed",
		"reconcile: kernel instance gone (module reloaded?); made again",
		"reconcile: kernel limit set back to the record's",
		"reconcile: kernel instance without a record destroyed",
		"reconcile: kernel instance without a record holds memory; left until the next start",
		"reconcile: kernel instance not made by cgpud; left alone",
		"reconcile: device filter without an instance removed",
	} {
		found := false
		for _, e := range w.log.AllEntries() {
			found = found || e.Message == want
		}
		if !found {
			t.Errorf("no log line %q", want)
		}
	}
}

// ctxKernel refuses calls whose context is done, as the Device does.
type ctxKernel struct{ kernel.Client }

func (k ctxKernel) Destroy(ctx context.Context, id uint64, force bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return k.Client.Destroy(ctx, id, force)
}

func (k ctxKernel) Create(ctx context.Context, req kernel.CreateRequest) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return k.Client.Create(ctx, req)
}

// TestCallerHangsUp: a create whose caller is gone is rolled back whole; a
// destroy already recorded is finished whole.
func TestCallerHangsUp(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager(WithKernel(ctxKernel{w.kern}))
	w.cgroup("a")
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.CreateInstance(ctx, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: gib}); err == nil {
		t.Fatal("create with a cancelled context succeeded")
	}
	if err := m.DestroyInstance(ctx, "a", true); err != nil {
		t.Fatalf("destroy with a cancelled context: %v", err)
	}
	if recs := w.checkClean(m); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
}

// TestReconcileAfterModuleReload: every kernel instance went with the
// module; the containers still run, so their slices are made again.
func TestReconcileAfterModuleReload(t *testing.T) {
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	for _, c := range []string{"a", "b", "c"} {
		w.cgroup(c)
		mustCreate(t, m, v1.CreateRequest{Name: c, Cgroup: "/kubepods/" + c, Memory: 2 * gib, GPUs: []string{"0", "1"}})
	}
	m.Close()
	w.kern.Reset()
	m2 := w.manager()
	if recs := w.checkClean(m2); len(recs) != 3 {
		t.Fatalf("%d records after the reload, want 3", len(recs))
	}
	if n := len(w.kernelInstances()); n != 6 {
		t.Fatalf("%d kernel instances, want 6", n)
	}
}

// TestReconcileKeepsInstancesOnBrokenMount: a daemon started with a wrong
// cgroup root must not take every cgroup for gone.
func TestReconcileKeepsInstancesOnBrokenMount(t *testing.T) {
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	w.cgroup("a")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib})
	m.Close()
	bad := cgroup.New(cgroup.WithRoot(filepath.Join(w.root, "not-mounted")), cgroup.WithFSCheck(acceptAll))
	m2, err := New(w.opts(WithCgroups(bad))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.Reconcile(context.Background()); !isKind(err, ErrUnavailable) {
		t.Fatalf("Reconcile on a missing mount: %v", err)
	}
	if recs := w.checkClean(m2); len(recs) != 1 {
		t.Fatalf("%d records kept, want 1", len(recs))
	}
}
