package instance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// TestConcurrentMixedOperations runs creates, resizes, destroys and
// cgroup removals at once (with Run watching) and checks that what is
// left is consistent: the accounting, the kernel, the filters and the
// records agree, and every refusal carried a sentinel.
func TestConcurrentMixedOperations(t *testing.T) {
	w := newWorld(t, 2, 8*gib)
	m := w.manager(WithSweep(10 * time.Millisecond))
	const cgroups, workers, rounds = 24, 16, 60
	for i := range cgroups {
		w.cgroup(fmt.Sprint("c", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(ctx) }()
	var cgMu sync.Mutex // a cgroup is removed and made again under it
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				i := rng.IntN(cgroups)
				name := fmt.Sprint("i", i)
				var err error
				switch op := rng.IntN(10); {
				case op < 5:
					_, err = m.CreateInstance(context.Background(), v1.CreateRequest{Name: name, Cgroup: fmt.Sprint("/kubepods/c", i), Memory: uint64(1+rng.IntN(3)) * gib, Placement: []string{"", "spread"}[rng.IntN(2)]})
				case op < 7:
					mem := uint64(1+rng.IntN(4)) * gib
					_, err = m.ResizeInstance(context.Background(), name, v1.ResizeRequest{Memory: &mem})
				case op < 9:
					err = m.DestroyInstance(context.Background(), name, rng.IntN(2) == 0)
				default:
					cgMu.Lock()
					rel := fmt.Sprint("/kubepods/c", i)
					w.rmCgroup(rel)
					w.cgroup(fmt.Sprint("c", i))
					cgMu.Unlock()
				}
				if err != nil && !isKind(err, ErrNoSpace) && !isKind(err, ErrConflict) && !isKind(err, ErrNotFound) && !isKind(err, ErrInvalid) {
					t.Errorf("unexpected error: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	// Let the watcher catch up with the last removals.
	waitFor(t, func() bool {
		for _, in := range mustList(t, m) {
			if ok, _ := w.cg.Exists(in.CgroupID, in.Cgroup); !ok {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	recs := w.checkClean(m)
	t.Logf("%d instances left", len(recs))
	// A fresh start agrees with the running one.
	w.checkClean(w.manager())
}

func mustList(t *testing.T, m *Manager) []v1.Instance {
	t.Helper()
	ins, err := m.ListInstances(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return ins
}
