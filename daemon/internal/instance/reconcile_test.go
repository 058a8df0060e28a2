package instance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// reconciled returns a Manager on w after one Reconcile, which must not
// fail: what it could not repair shows in Health, not as an error.
func reconciled(t *testing.T, w *world, extra ...Option) *Manager {
	t.Helper()
	m, err := New(w.opts(extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return m
}

// instancesCheck returns Health's status and its "instances" check.
func instancesCheck(t *testing.T, m *Manager) (string, v1.Check) {
	t.Helper()
	h := m.Health(context.Background())
	for _, c := range h.Checks {
		if c.Name == "instances" {
			return h.Status, c
		}
	}
	t.Fatalf("Health has no instances check: %+v", h)
	return "", v1.Check{}
}

func recordOf(t *testing.T, w *world, name string) state.Record {
	t.Helper()
	for _, r := range w.records() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no record %s in %+v", name, w.records())
	return state.Record{}
}

// loseState replaces the world's state directory by an empty one.
func loseState(t *testing.T, w *world) {
	t.Helper()
	s, err := state.Open(state.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w.store = s
}

// TestReconcileDegradesWhenKernelInstanceCannotBeMade: the module was
// reloaded and a container's kernel instance cannot be made again. The
// container still runs, so its record stays, its cgroup is denied every
// GPU, and the instance and Health say degraded; a retry that can make it
// puts everything back.
func TestReconcileDegradesWhenKernelInstanceCannotBeMade(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	w.cgroup("a")
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: 2 * gib, GPUs: []string{"1"}})
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: 2 * gib, GPUs: []string{"0"}})
	m.Close()
	w.kern.Reset()
	// Records are repaired in name order: a's create is the one refused.
	w.kern.FailNext("create", &kernel.Error{Op: "create", Errno: unix.ENOSPC, Sentinel: kernel.ErrNoSpace})

	m2 := reconciled(t, w, WithRetry(5*time.Millisecond))
	rec := recordOf(t, w, "a")
	if !rec.Denied || rec.Slots[0].KernelID != 0 {
		t.Errorf("record of a: %+v; want it kept, denied, with no kernel id", rec)
	}
	if mins, ok := w.filter.get(rec.CgroupID); !ok || len(mins) != 0 {
		t.Errorf("filter of a: %v (pinned %v); want one that allows no GPU", mins, ok)
	}
	in, err := m2.GetInstance(ctx, "a")
	if err != nil || in.State != v1.StateDegraded || !strings.Contains(in.Reason, "GPU 1") {
		t.Errorf("instance a = %+v, %v; want degraded with a reason naming GPU 1", in, err)
	}
	if in, _ := m2.GetInstance(ctx, "b"); in.State != v1.StateReady || in.Reason != "" {
		t.Errorf("instance b = %+v; want ready", in)
	}
	if st, c := instancesCheck(t, m2); st != "degraded" || c.OK || !strings.Contains(c.Message, "instance a is degraded") {
		t.Errorf("Health %s, instances check %+v; want degraded naming a", st, c)
	}
	if _, err := m2.ResizeInstance(ctx, "a", v1.ResizeRequest{Memory: ptr(3 * gib)}); !isKind(err, ErrConflict) {
		t.Errorf("resize of a degraded instance: %v", err)
	}

	// The retry, with the kernel willing now.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m2.Run(runCtx) }()
	waitFor(t, func() bool {
		in, _ := m2.GetInstance(ctx, "a")
		return in.State == v1.StateReady
	})
	cancel()
	<-done
	w.checkClean(m2) // a's own filter is back
	if rec := recordOf(t, w, "a"); rec.Denied {
		t.Errorf("record of a still denied: %+v", rec)
	}
	if st, c := instancesCheck(t, m2); st != "ok" || !c.OK {
		t.Errorf("Health after the repair: %s, %+v", st, c)
	}
}

// TestReconcileAdoptsAfterStateLoss: the state directory is gone, a
// container's kernel instance is attached to its live cgroup (and its
// filter is pinned): it is adopted, not destroyed. An idle kernel instance
// attached to nothing is still destroyed.
func TestReconcileAdoptsAfterStateLoss(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	w.cgroup("a")
	mustCreate(t, m, v1.CreateRequest{Name: "a", ContainerID: "ca", Cgroup: "/kubepods/a", Memory: 3 * gib, Weight: 2, GPUs: []string{"0", "1"}})
	m.Close()
	w.kern.Create(ctx, kernel.CreateRequest{Name: "idle.0", GPU: 0, MemLimit: gib})
	loseState(t, w)

	m2 := reconciled(t, w)
	kin := w.kernelInstances()
	if _, ok := kin["idle.0"]; ok {
		t.Error("idle unattached kernel instance kept")
	}
	recs := w.checkClean(m2)
	if len(recs) != 1 {
		t.Fatalf("records %+v; want a adopted", recs)
	}
	a := recs[0]
	want := state.Record{Name: "a", Cgroup: "/kubepods/a", CgroupID: a.CgroupID, Memory: 3 * gib, Weight: 2, State: state.StateReady, Created: a.Created,
		Slots: []state.Slot{
			{GPU: 0, Minor: 0, UUID: w.inv.GPUs[0].UUID, KernelID: kin["a.0"].ID},
			{GPU: 1, Minor: 1, UUID: w.inv.GPUs[1].UUID, KernelID: kin["a.1"].ID},
		}}
	if a.CgroupID == 0 || !slices.Equal(a.Slots, want.Slots) || a.Cgroup != want.Cgroup || a.Memory != want.Memory || a.Weight != want.Weight {
		t.Fatalf("adopted %+v, want %+v", a, want)
	}
	if st, c := instancesCheck(t, m2); st != "ok" || !c.OK {
		t.Errorf("Health after an adoption: %s, %+v", st, c)
	}
	// It is an instance like any other: its cgroup's end destroys it.
	w.rmCgroup("/kubepods/a")
	m2.cgroupGone(ctx, cgroupGoneOf(m2, "a"))
	if recs := w.checkClean(m2); len(recs) != 0 {
		t.Fatalf("records after the cgroup went: %+v", recs)
	}
}

// TestReconcileKeepsOrphansItCannotTellApart: after the state directory
// is lost with two live containers, the kernel cannot say which cgroup
// each instance guards; both are kept (with their filters), Health says
// so, and once their cgroups are gone a retry destroys them.
func TestReconcileKeepsOrphansItCannotTellApart(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	for _, c := range []string{"a", "b"} {
		w.cgroup(c)
		mustCreate(t, m, v1.CreateRequest{Name: c, Cgroup: "/kubepods/" + c, Memory: gib})
	}
	m.Close()
	pinned, _ := w.filter.Pinned(ctx)
	loseState(t, w)

	m2 := reconciled(t, w)
	if n := len(w.kernelInstances()); n != 2 {
		t.Errorf("%d kernel instances left; want both kept", n)
	}
	if now, _ := w.filter.Pinned(ctx); !slices.Equal(now, pinned) {
		t.Errorf("filters %v, want %v kept", now, pinned)
	}
	if st, c := instancesCheck(t, m2); st != "degraded" || !strings.Contains(c.Message, "a.0") || !strings.Contains(c.Message, "b.0") {
		t.Errorf("Health %s, %+v; want degraded naming a.0 and b.0", st, c)
	}

	w.rmCgroup("/kubepods/a")
	w.rmCgroup("/kubepods/b")
	if err := m2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if recs := w.checkClean(m2); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
	if st, _ := instancesCheck(t, m2); st != "ok" {
		t.Errorf("Health once the cgroups are gone: %s", st)
	}
}

// TestReconcileNeverRaisesTheRecord: a kernel limit raised behind the
// daemon's back (a write to /proc/cgpu_km/<gpu>/<instance>/memsize) is set
// back to the record's; while more than the record's limit is in use the
// kernel refuses, the record stays, and Health is degraded.
func TestReconcileNeverRaisesTheRecord(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 1, 16*gib)
	m := w.manager()
	w.cgroup("a")
	in := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: 4 * gib})
	m.Close()
	id := in.GPUs[0].KernelID
	w.kern.SetLimit(ctx, id, 16*gib)
	w.kern.SetUsage(id, 6*gib, 1)

	m2 := reconciled(t, w)
	if rec := recordOf(t, w, "a"); rec.Memory != 4*gib {
		t.Errorf("record limit %d, want the record's 4 GiB", rec.Memory)
	}
	if got, _ := m2.GetInstance(ctx, "a"); got.Memory != 4*gib || got.State != v1.StateDegraded || !strings.Contains(got.Reason, "16 GiB") {
		t.Errorf("instance %+v; want 4 GiB, degraded, naming the kernel's 16 GiB", got)
	}
	if st, c := instancesCheck(t, m2); st != "degraded" || !strings.Contains(c.Message, "instance a") {
		t.Errorf("Health %s, %+v; want degraded naming a", st, c)
	}
	// Still limited, if above the record: the container keeps its GPU.
	if mins, _ := w.filter.get(in.CgroupID); !slices.Equal(mins, []uint32{0}) {
		t.Errorf("filter %v; want GPU 0 still allowed", mins)
	}

	w.kern.SetUsage(id, gib, 1)
	if err := m2.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.kern.Stats(ctx, id); st.MemLimit != 4*gib {
		t.Errorf("kernel limit %d after the retry, want 4 GiB", st.MemLimit)
	}
	if st, _ := instancesCheck(t, m2); st != "ok" {
		t.Errorf("Health after the retry: %s", st)
	}
	w.checkClean(m2)
}

func ptr[T any](v T) *T { return &v }
