package cgroup

// Tests on the real cgroup2 mount: they need root, so they run in the VM
// guest (tests/vm/suites/cgroup sets CGPU_VM=1); anywhere else they skip.

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func vmOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs the VM guest's cgroup2 mount and root (CGPU_VM=1)")
	}
}

// mkCgroup makes a cgroup under the real mount, removed at the end.
func mkCgroup(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(DefaultRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	return dir
}

// TestVMResolve: the id of a real cgroup is the one the kernel uses
// (name_to_handle_at's cgroup file handle carries the cgroup id).
func TestVMResolve(t *testing.T) {
	vmOnly(t)
	dir := mkCgroup(t, "cgroup-test-resolve")
	r := New()
	if err := r.CheckRoot(); err != nil {
		t.Fatalf("CheckRoot on %s: %v", DefaultRoot, err)
	}
	cg, err := r.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, dir, 0)
	if err != nil {
		t.Fatalf("name_to_handle_at: %v", err)
	}
	b := h.Bytes()
	if len(b) < 8 {
		t.Fatalf("handle of %d bytes", len(b))
	}
	var kid uint64
	for i := 7; i >= 0; i-- {
		kid = kid<<8 | uint64(b[i])
	}
	if cg.ID != kid || cg.Rel != "/cgroup-test-resolve" {
		t.Fatalf("Resolve = %+v; the kernel's cgroup id is %d", cg, kid)
	}
	if _, err := r.Resolve("/proc/self"); err == nil {
		t.Fatal("Resolve accepted a path off the mount")
	}
	tmp := New(WithRoot(t.TempDir()))
	if err := tmp.CheckRoot(); err == nil {
		t.Fatal("CheckRoot passed a tmpfs dir as cgroup2")
	}
}

// TestVMWatchInotify: rmdir of a real cgroup is seen through inotify (the
// sweep is an hour away), for a cgroup and for a nested one.
func TestVMWatchInotify(t *testing.T) {
	vmOnly(t)
	r := New()
	w, err := NewWatcher(r, WithSweep(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !w.Inotify() {
		t.Fatal("no inotify in the guest")
	}
	log := newGoneLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx, log.add)
	parent := mkCgroup(t, "cgroup-test-watch")
	child := mkCgroup(t, "cgroup-test-watch/c1")
	for _, d := range []string{child, parent} {
		cg, err := r.Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(cg.ID, cg.Rel); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
		g := log.wait(t, 5*time.Second)
		if g.ID != cg.ID || g.By != "inotify" {
			t.Fatalf("report %+v; want %d by inotify", g, cg.ID)
		}
	}
}
