package devfilter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNewRejectsEmptyRoots(t *testing.T) {
	for name, opt := range map[string]Option{
		"bpffs":  WithBPFFS(""),
		"proc":   WithProcRoot(""),
		"sys":    WithSysRoot(""),
		"dev":    WithDevRoot(""),
		"cgroup": WithCgroupRoot(""),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(opt); err == nil {
				t.Error("New accepted an empty root")
			}
		})
	}
}

func TestCgroupDir(t *testing.T) {
	m, err := New(WithCgroupRoot("/sys/fs/cgroup/"))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/sys/fs/cgroup/kubepods/pod1/ctr": "/sys/fs/cgroup/kubepods/pod1/ctr",
		"/kubepods/pod1/ctr":               "/sys/fs/cgroup/kubepods/pod1/ctr",
		"kubepods/pod1/ctr":                "/sys/fs/cgroup/kubepods/pod1/ctr",
		"/sys/fs/cgroup":                   "/sys/fs/cgroup",
		"/":                                "/sys/fs/cgroup",
		"/sys/fs/cgroupX/a":                "/sys/fs/cgroup/sys/fs/cgroupX/a",
		"/kubepods/../../etc":              "/sys/fs/cgroup/etc",
	} {
		if got := m.cgroupDir(in); got != want {
			t.Errorf("cgroupDir(%q) = %q, want %q", in, got, want)
		}
	}
}

// Apply checks its arguments before it needs the kernel, so these run as
// any user.
func TestApplyRejectsBadArguments(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "ctr")
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(cg, &st); err != nil {
		t.Fatal(err)
	}
	m, err := New(WithCgroupRoot(root), WithBPFFS(filepath.Join(root, "bpf")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		path  string
		id    uint64
		allow []uint32
		is    error
	}{
		{name: "id 0", path: "/ctr", id: 0},
		{name: "wrong id", path: "/ctr", id: st.Ino + 1, is: ErrCgroupMismatch},
		{name: "no such cgroup", path: "/gone", id: st.Ino, is: os.ErrNotExist},
		{name: "not a directory", path: "/file", id: st.Ino},
		{name: "minor of nvidiactl", path: cg, id: st.Ino, allow: []uint32{0, 255}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Apply(ctx, tc.path, tc.id, tc.allow)
			if err == nil {
				t.Fatal("Apply accepted it")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Apply = %v, want errors.Is %v", err, tc.is)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Apply(cancelled, "/ctr", st.Ino, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply on a cancelled context = %v", err)
	}
}

func TestPinnedListsFilterPins(t *testing.T) {
	bpffs := t.TempDir()
	m, err := New(WithBPFFS(bpffs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := m.Pinned(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("Pinned without a pin directory = %v, %v; want none", got, err)
	}
	dir := filepath.Join(bpffs, "cgpu")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"devfilter-4242", "devfilter-17", "devfilter-18446744073709551615",
		"devfilter-0", "devfilter-", "devfilter-+5", "devfilter-007", "devfilter-1x",
		"other-99", "devfilter-18446744073709551616",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err = m.Pinned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{17, 4242, 18446744073709551615}
	if !slices.Equal(got, want) {
		t.Errorf("Pinned = %v, want %v", got, want)
	}
}

func TestRemoveWithoutPinIsNoop(t *testing.T) {
	m, err := New(WithBPFFS(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := m.Remove(context.Background(), 1234); err != nil {
			t.Fatalf("Remove of a filter that is not there = %v", err)
		}
	}
}
