package cgroup

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type goneLog struct {
	mu   sync.Mutex
	got  []Gone
	seen chan Gone
}

func newGoneLog() *goneLog { return &goneLog{seen: make(chan Gone, 16)} }

func (g *goneLog) add(x Gone) {
	g.mu.Lock()
	g.got = append(g.got, x)
	g.mu.Unlock()
	g.seen <- x
}

func (g *goneLog) wait(t *testing.T, d time.Duration) Gone {
	t.Helper()
	select {
	case x := <-g.seen:
		return x
	case <-time.After(d):
		t.Fatalf("no removal reported within %v", d)
		return Gone{}
	}
}

func (g *goneLog) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case x := <-g.seen:
		t.Fatalf("unexpected report %+v", x)
	case <-time.After(d):
	}
}

func startWatcher(t *testing.T, root string, inotify bool, sweep time.Duration) (*Watcher, *Resolver, *goneLog) {
	t.Helper()
	r := New(WithRoot(root), WithFSCheck(acceptAll))
	w, err := NewWatcher(r, WithSweep(sweep))
	if err != nil {
		t.Fatal(err)
	}
	if !inotify {
		w.Close()
		w.mu.Lock()
		w.file, w.fd, w.closed = nil, -1, false
		w.mu.Unlock()
	} else if !w.Inotify() {
		t.Skip("inotify unavailable on this host")
	}
	log := newGoneLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, log.add) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return w, r, log
}

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWatcherInotify(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "a", "b", "c")
	// A sweep an hour away: only inotify can report in time.
	w, r, log := startWatcher(t, root, true, time.Hour)
	ids := map[string]uint64{}
	for _, n := range []string{"a", "b", "c"} {
		cg, err := r.Resolve(n)
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = cg.ID
		if err := w.Add(cg.ID, cg.Rel); err != nil {
			t.Fatal(err)
		}
	}
	w.Remove(ids["c"])
	if err := os.Remove(filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	g := log.wait(t, 5*time.Second)
	if g.ID != ids["a"] || g.Path != "/a" || g.By != "inotify" {
		t.Fatalf("report %+v; want a's id %d by inotify", g, ids["a"])
	}
	log.none(t, 200*time.Millisecond)
	if n := w.Watched(); n != 1 {
		t.Fatalf("%d watched, want 1 (b)", n)
	}
	// b shares the parent's watch with the others, which are gone.
	if err := os.Remove(filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if g := log.wait(t, 5*time.Second); g.ID != ids["b"] || g.By != "inotify" {
		t.Fatalf("report %+v; want b's id %d by inotify", g, ids["b"])
	}
	// Made again under the same name before the event is read: a new
	// cgroup, and the old one is still reported.
	mkdirs(t, root, "p/q")
	q, _ := r.Resolve("/p/q")
	w.Add(q.ID, q.Rel)
	os.Remove(filepath.Join(root, "p/q"))
	mkdirs(t, root, "p/q")
	if ino(t, filepath.Join(root, "p/q")) != q.ID {
		if g := log.wait(t, 5*time.Second); g.ID != q.ID {
			t.Fatalf("report %+v; want the old q", g)
		}
	}
}

func TestWatcherSweep(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "x/y", "z")
	w, r, log := startWatcher(t, root, false, 20*time.Millisecond)
	y, _ := r.Resolve("/x/y")
	z, _ := r.Resolve("/z")
	w.Add(y.ID, y.Path)
	w.Add(z.ID, z.Rel)
	if err := os.RemoveAll(filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	g := log.wait(t, 5*time.Second)
	if g.ID != y.ID || g.By != "sweep" {
		t.Fatalf("report %+v; want y by sweep", g)
	}
	log.none(t, 100*time.Millisecond)
	// Replaced by a new directory at the same path: still gone.
	if err := os.Remove(z.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(z.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	if ino(t, z.Path) != z.ID {
		if g := log.wait(t, 5*time.Second); g.ID != z.ID {
			t.Fatalf("report %+v; want z", g)
		}
	}
}

func TestWatcherAddOfMissingIsReported(t *testing.T) {
	root := t.TempDir()
	w, _, log := startWatcher(t, root, true, time.Hour)
	if err := w.Add(12345, "/never"); err != nil {
		t.Fatal(err)
	}
	if g := log.wait(t, 5*time.Second); g.ID != 12345 || g.By != "sweep" {
		t.Fatalf("report %+v", g)
	}
	if err := w.Add(1, "/../etc"); err == nil {
		t.Fatal("Add of an escaping path succeeded")
	}
}

// TestWatcherTrustsNoBrokenMount: while the mount fails its check, a
// missing cgroup is not reported; once the mount is sound it is.
func TestWatcherTrustsNoBrokenMount(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "a")
	var broken atomic.Bool
	broken.Store(true)
	r := New(WithRoot(root), WithFSCheck(func(string) error {
		if broken.Load() {
			return ErrNotCgroup
		}
		return nil
	}))
	a, err := inode(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckRoot(); err == nil {
		t.Fatal("CheckRoot passed a broken mount")
	}
	w, err := NewWatcher(r, WithSweep(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	log := newGoneLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx, log.add)
	w.Add(a, "/a")
	os.Remove(filepath.Join(root, "a"))
	log.none(t, 200*time.Millisecond)
	broken.Store(false)
	if g := log.wait(t, 5*time.Second); g.ID != a || g.By != "sweep" {
		t.Fatalf("report %+v", g)
	}
	if err := New(WithRoot(filepath.Join(root, "nope")), WithFSCheck(acceptAll)).CheckRoot(); err == nil {
		t.Fatal("CheckRoot passed a missing mount")
	}
}
