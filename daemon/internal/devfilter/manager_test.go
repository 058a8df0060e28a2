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

// Stale names the filters built with numbers the host no longer has, and
// those this process did not build, so that nvidia-uvm loading after a
// filter was made (or coming back with another major) reaches every filter.
func TestStale(t *testing.T) {
	root := t.TempDir()
	proc, bpffs := filepath.Join(root, "proc"), filepath.Join(root, "bpf")
	sysRoot, devRoot := host{}.make(t) // no cgpu.ko
	for _, d := range []string{proc, filepath.Join(bpffs, "cgpu")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setDevices := func(fixture string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", fixture, "devices"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, "devices"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"17", "42"} {
		if err := os.WriteFile(filepath.Join(bpffs, "cgpu", "devfilter-"+id), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(WithProcRoot(proc), WithSysRoot(sysRoot), WithDevRoot(devRoot), WithBPFFS(bpffs))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stale := func(what string, want ...uint64) {
		t.Helper()
		got, err := m.Stale(ctx)
		if err != nil {
			t.Fatalf("%s: Stale: %v", what, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Stale = %v, want %v", what, got, want)
		}
	}

	setDevices("proc-nouvm")
	// 17 built by this process before nvidia-uvm loaded, 42 by an earlier
	// one, 99 built and since removed by hand.
	m.built[17] = devices{}
	m.built[99] = devices{}
	stale("nvidia-uvm not loaded", 42)
	if _, ok := m.built[99]; ok {
		t.Error("the numbers of a filter no longer pinned are kept")
	}

	setDevices("proc-nvidia") // nvidia-uvm at 236
	stale("nvidia-uvm loaded", 17, 42)

	m.built[17] = devices{uvmToolsMajor: 236}
	m.built[42] = devices{uvmToolsMajor: 236}
	stale("both applied again")

	if err := os.WriteFile(filepath.Join(proc, "devices"), []byte("Character devices:\n236 nvidia-uvm\n240\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Stale(ctx); err == nil {
		t.Errorf("Stale with a malformed /proc/devices = %v, want an error", got)
	}
	if err := os.WriteFile(filepath.Join(proc, "devices"), []byte("Character devices:\n237 nvidia-uvm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale("nvidia-uvm reloaded at another major", 17, 42)
}
