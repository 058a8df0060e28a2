package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func acceptAll(string) error { return nil }

func ino(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"kubepods/pod1/c1", "system.slice", "outside"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "kubepods/file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "kubepods/pod1"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(root, "kubepods/escape")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestResolve(t *testing.T) {
	root := tree(t)
	r := New(WithRoot(root), WithFSCheck(acceptAll))
	c1 := ino(t, filepath.Join(root, "kubepods/pod1/c1"))
	tests := []struct {
		name, path string
		rel        string
		err        error
	}{
		{"absolute under the mount", filepath.Join(root, "kubepods/pod1/c1"), "/kubepods/pod1/c1", nil},
		{"relative with slash", "/kubepods/pod1/c1", "/kubepods/pod1/c1", nil},
		{"relative without slash", "kubepods/pod1/c1", "/kubepods/pod1/c1", nil},
		{"trailing slash and dots", "/kubepods/./pod1/c1/", "/kubepods/pod1/c1", nil},
		{"empty", "", "", ErrInvalid},
		{"the mount itself", root, "", ErrInvalid},
		{"slash", "/", "", ErrInvalid},
		{"dot dot", "/kubepods/../outside", "", ErrInvalid},
		{"dot dot out of the mount", "/../../etc", "", ErrInvalid},
		{"absolute dot dot", root + "/kubepods/../../x", "", ErrInvalid},
		{"NUL", "/kube\x00pods", "", ErrInvalid},
		{"symlinked dir", "/link/c1", "", ErrInvalid},
		{"symlink out", "/kubepods/escape/etc", "", ErrInvalid},
		{"missing", "/kubepods/pod2", "", ErrNotFound},
		{"a file", "/kubepods/file", "", ErrNotCgroup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cg, err := r.Resolve(tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q) = %+v, %v; want %v", tc.path, cg, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if cg.Rel != tc.rel || cg.Path != filepath.Join(root, tc.rel) || cg.ID != c1 {
				t.Fatalf("Resolve(%q) = %+v; want rel %s id %d", tc.path, cg, tc.rel, c1)
			}
		})
	}
}

func TestResolveChecksFileSystem(t *testing.T) {
	root := tree(t)
	// The real check: a tmp dir is not cgroup2.
	r := New(WithRoot(root))
	if _, err := r.Resolve("/kubepods/pod1"); !errors.Is(err, ErrNotCgroup) {
		t.Fatalf("Resolve on a tmp dir: %v, want ErrNotCgroup", err)
	}
	if err := IsCgroup2(root); !errors.Is(err, ErrNotCgroup) {
		t.Fatalf("IsCgroup2(tmp): %v", err)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if err := IsCgroup2("/sys/fs/cgroup"); err != nil {
			t.Fatalf("IsCgroup2 on the host's cgroup2 mount: %v", err)
		}
	}
}

func TestExists(t *testing.T) {
	root := tree(t)
	r := New(WithRoot(root), WithFSCheck(acceptAll))
	cg, err := r.Resolve("/kubepods/pod1/c1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Exists(cg.ID, cg.Rel); !ok || err != nil {
		t.Fatalf("Exists = %v, %v; want true", ok, err)
	}
	if ok, err := r.Exists(cg.ID+1, cg.Rel); ok || err != nil {
		t.Fatalf("Exists with another id = %v, %v; want false", ok, err)
	}
	if err := os.Remove(cg.Path); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Exists(cg.ID, cg.Path); ok || err != nil {
		t.Fatalf("Exists after rmdir = %v, %v; want false", ok, err)
	}
	// Made again at the same path: another cgroup.
	if err := os.Mkdir(cg.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	if ino(t, cg.Path) != cg.ID {
		if ok, _ := r.Exists(cg.ID, cg.Path); ok {
			t.Fatal("Exists holds for a new directory at the old path")
		}
	}
	if _, err := r.Exists(1, "/../x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Exists of an escaping path: %v", err)
	}
}

func TestFind(t *testing.T) {
	root := tree(t)
	r := New(WithRoot(root), WithFSCheck(acceptAll))
	c1 := ino(t, filepath.Join(root, "kubepods/pod1/c1"))
	sys := ino(t, filepath.Join(root, "system.slice"))
	gone := ino(t, filepath.Join(root, "outside"))
	if err := os.Remove(filepath.Join(root, "outside")); err != nil {
		t.Fatal(err)
	}
	got, err := r.Find([]uint64{c1, sys, gone})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]Cgroup{
		c1:  {Rel: "/kubepods/pod1/c1", Path: filepath.Join(root, "kubepods/pod1/c1"), ID: c1},
		sys: {Rel: "/system.slice", Path: filepath.Join(root, "system.slice"), ID: sys},
	}
	if len(got) != len(want) || got[c1] != want[c1] || got[sys] != want[sys] {
		t.Fatalf("Find = %+v, want %+v", got, want)
	}
	if got, err := r.Find(nil); err != nil || len(got) != 0 {
		t.Fatalf("Find(nil) = %v, %v", got, err)
	}
	if _, err := New(WithRoot(filepath.Join(root, "none"))).Find([]uint64{c1}); err == nil {
		t.Fatal("Find under a missing root succeeded")
	}
}
