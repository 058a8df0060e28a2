package instance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
)

// staleSentinel stands for what a filter built before nvidia-uvm loaded allows
// from the host's point of view now: not what its instance should.
var staleSentinel = []uint32{99}

// filtersCheck returns Health's status and its "filters" check.
func filtersCheck(t *testing.T, m *Manager) (string, v1.Check) {
	t.Helper()
	h := m.Health(context.Background())
	for _, c := range h.Checks {
		if c.Name == "filters" {
			return h.Status, c
		}
	}
	t.Fatalf("Health has no filters check: %+v", h)
	return "", v1.Check{}
}

// A filter built with device numbers the host no longer has is applied
// again with its instance's GPUs.
func TestRefreshFiltersAppliesStaleAgain(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	w.cgroup("a")
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib, GPUs: []string{"1"}})
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: gib, GPUs: []string{"0", "1"}})
	w.filter.makeStale(staleSentinel)
	if err := m.RefreshFilters(ctx); err != nil {
		t.Fatal(err)
	}
	w.checkClean(m)
	if ids, _ := w.filter.Stale(ctx); len(ids) != 0 {
		t.Errorf("still stale: %v", ids)
	}
	if st, c := filtersCheck(t, m); st != "ok" || !c.OK {
		t.Errorf("Health %s, filters check %+v", st, c)
	}
}

// The filter of an instance Reconcile denied every GPU stays denying every
// GPU when it is applied again.
func TestRefreshFiltersKeepsDenied(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	w.cgroup("a")
	w.cgroup("b")
	mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib, GPUs: []string{"1"}})
	mustCreate(t, m, v1.CreateRequest{Name: "b", Cgroup: "/kubepods/b", Memory: gib, GPUs: []string{"0"}})
	m.Close()
	w.kern.Reset()
	w.kern.FailNext("create", &kernel.Error{Op: "create", Errno: unix.ENOSPC, Sentinel: kernel.ErrNoSpace})
	m2 := reconciled(t, w, WithRetry(0))
	a, b := recordOf(t, w, "a"), recordOf(t, w, "b")
	if !a.Denied {
		t.Fatalf("record of a not denied: %+v", a)
	}
	w.filter.makeStale(staleSentinel)
	if err := m2.RefreshFilters(ctx); err != nil {
		t.Fatal(err)
	}
	if mins, ok := w.filter.get(a.CgroupID); !ok || len(mins) != 0 {
		t.Errorf("filter of the denied a: %v (pinned %v); want one that allows no GPU", mins, ok)
	}
	if mins, ok := w.filter.get(b.CgroupID); !ok || !slices.Equal(mins, []uint32{0}) {
		t.Errorf("filter of b: %v (pinned %v); want [0]", mins, ok)
	}
}

// A filter that cannot be brought up to date makes Health degraded, and a
// later refresh that can clears it.
func TestRefreshFiltersFailureDegradesHealth(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 16*gib)
	m := w.manager()
	w.cgroup("a")
	a := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib, GPUs: []string{"1"}})
	w.filter.makeStale(staleSentinel)

	w.filter.mu.Lock()
	w.filter.applyErr[a.CgroupID] = errors.New("load program: out of memory")
	w.filter.mu.Unlock()
	if err := m.RefreshFilters(ctx); err == nil {
		t.Error("RefreshFilters = nil with a filter that cannot be applied")
	}
	if st, c := filtersCheck(t, m); st != "degraded" || c.OK || !strings.Contains(c.Message, "instance a") {
		t.Errorf("Health %s, filters check %+v; want degraded naming a", st, c)
	}
	w.filter.mu.Lock()
	delete(w.filter.applyErr, a.CgroupID)
	w.filter.mu.Unlock()
	if err := m.RefreshFilters(ctx); err != nil {
		t.Fatal(err)
	}
	if st, c := filtersCheck(t, m); st != "ok" || !c.OK {
		t.Errorf("after the repair: Health %s, filters check %+v", st, c)
	}
	w.checkClean(m)

	// The host's numbers cannot be read: no filter can be called current.
	w.filter.mu.Lock()
	w.filter.staleErr = errors.New("read /proc/devices: permission denied")
	w.filter.mu.Unlock()
	if err := m.RefreshFilters(ctx); err == nil {
		t.Error("RefreshFilters = nil without the host's device numbers")
	}
	if st, c := filtersCheck(t, m); st != "degraded" || !strings.Contains(c.Message, "/proc/devices") {
		t.Errorf("Health %s, filters check %+v; want degraded", st, c)
	}
	w.filter.mu.Lock()
	w.filter.staleErr = nil
	w.filter.mu.Unlock()

	// A stale filter no instance claims cannot be built again.
	if err := w.filter.Apply(ctx, "/kubepods/x", 777, nil); err != nil {
		t.Fatal(err)
	}
	w.filter.makeStale(staleSentinel)
	if err := m.RefreshFilters(ctx); err == nil || !strings.Contains(err.Error(), "cgroup 777") {
		t.Errorf("RefreshFilters with an unclaimed stale filter = %v", err)
	}
	if st, _ := filtersCheck(t, m); st != "degraded" {
		t.Errorf("Health %s with an unclaimed stale filter", st)
	}
	if err := w.filter.Remove(ctx, 777); err != nil {
		t.Fatal(err)
	}
	if err := m.RefreshFilters(ctx); err != nil {
		t.Errorf("after the unclaimed filter went: %v", err)
	}
}

// Run brings stale filters up to date by itself, on its timer and when
// asked (SIGHUP).
func TestRunRefreshesFilters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		kick  bool
	}{
		{name: "timer", every: 5 * time.Millisecond},
		{name: "asked", every: 0, kick: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, 2, 16*gib)
			m := w.manager(WithFilterRefresh(tc.every))
			w.cgroup("a")
			a := mustCreate(t, m, v1.CreateRequest{Name: "a", Cgroup: "/kubepods/a", Memory: gib, GPUs: []string{"1"}})
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- m.Run(runCtx) }()
			defer func() { cancel(); <-done }()
			// Let Run's first refresh pass, so that only the timer or the
			// request can bring this one up to date.
			time.Sleep(20 * time.Millisecond)
			w.filter.makeStale(staleSentinel)
			if tc.kick {
				m.RefreshFiltersSoon()
			}
			waitFor(t, func() bool {
				mins, _ := w.filter.get(a.CgroupID)
				return slices.Equal(mins, []uint32{1})
			})
		})
	}
}

// Refreshes racing creates and destroys never put a filter back on a
// cgroup whose instance was destroyed, nor one with other GPUs than its
// instance's.
func TestRefreshFiltersRacesOperations(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 2, 64*gib)
	m := w.manager()
	const cgroups, workers, rounds = 8, 6, 80
	for i := range cgroups {
		w.cgroup(fmt.Sprint("c", i))
	}
	stop := make(chan struct{})
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.filter.makeStale(staleSentinel)
			if err := m.RefreshFilters(ctx); err != nil && !strings.Contains(err.Error(), "no instance claims") {
				t.Errorf("RefreshFilters: %v", err)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			for range rounds {
				i := rng.IntN(cgroups)
				name := fmt.Sprint("i", i)
				var err error
				if rng.IntN(2) == 0 {
					_, err = m.CreateInstance(ctx, v1.CreateRequest{Name: name, Cgroup: fmt.Sprint("/kubepods/c", i), Memory: gib, GPUs: []string{fmt.Sprint(rng.IntN(2))}})
				} else {
					err = m.DestroyInstance(ctx, name, true)
				}
				if err != nil && !isKind(err, ErrConflict) && !isKind(err, ErrNotFound) {
					t.Errorf("unexpected error: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-refreshed
	// What the last makeStale left is brought up to date; nothing else
	// may differ from the records.
	if err := m.RefreshFilters(ctx); err != nil {
		t.Fatal(err)
	}
	w.checkClean(m)
}
