package kernel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests below drive the real cgpu.ko. They run in the VM only
// (tests/vm/suites/kclient sets CGPU_VM=1 and runs them as root there).

func vmDevice(t *testing.T) *Device {
	t.Helper()
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs the real cgpu.ko as root: runs in the VM (tests/vm/run --suite kclient)")
	}
	d, err := New()
	if err != nil {
		t.Fatalf("open /dev/cgpu: %v", err)
	}
	t.Cleanup(func() {
		// Leave no instance behind for the next test.
		ids, _ := d.List(context.Background())
		for _, id := range ids {
			_ = d.Destroy(context.Background(), id, true)
		}
		d.Close()
	})
	return d
}

// vmCgroup makes a cgroup v2 directory and returns its path and id.
func vmCgroup(t *testing.T, name string) (string, uint64) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup", name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return dir, st.Ino
}

func vmWant(t *testing.T, what string, err, sentinel error, errno unix.Errno) {
	t.Helper()
	if !errors.Is(err, sentinel) || !errors.Is(err, errno) {
		t.Errorf("%s: %v, want %v (%s)", what, err, sentinel, unix.ErrnoName(errno))
	} else {
		t.Logf("%s: %v", what, err)
	}
}

func TestVMLifecycle(t *testing.T) {
	d := vmDevice(t)
	ctx := context.Background()
	v, err := d.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.ABIMajor != ABIMajor || v.ABIMinor != ABIMinor || v.NameLen != NameLen || v.MaxInst != MaxInstPerGPU {
		t.Fatalf("version %+v", v)
	}
	if err := CompatibleABI(v); err != nil {
		t.Fatal(err)
	}
	id, err := d.Create(ctx, CreateRequest{Name: "kc-a", GPU: 0, MemLimit: 256 << 20, Weight: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{ID: id, Name: "kc-a", GPU: 0, Weight: 2, MemLimit: 256 << 20}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	_, err = d.Create(ctx, CreateRequest{Name: "kc-a", GPU: 1, MemLimit: 1})
	vmWant(t, "create a taken name", err, ErrExists, unix.EEXIST)
	_, err = d.Create(ctx, CreateRequest{Name: "kc-b", GPU: 0, MemLimit: MemLimitMax + 1})
	vmWant(t, "create above 2^48", err, ErrInvalid, unix.EINVAL)

	_, cg := vmCgroup(t, "kc_attach")
	if err := d.Attach(ctx, id, cg); err != nil {
		t.Fatal(err)
	}
	vmWant(t, "attach twice", d.Attach(ctx, id, cg), ErrExists, unix.EEXIST)
	vmWant(t, "attach a cgroup id that is no cgroup", d.Attach(ctx, id, 0xdead0000beef), ErrNotFound, unix.ENOENT)
	vmWant(t, "attach to no instance", d.Attach(ctx, id+1000, cg), ErrNotFound, unix.ENOENT)
	if st, _ := d.Stats(ctx, id); st.Cgroups != 1 {
		t.Errorf("cgroups %d after attach, want 1", st.Cgroups)
	}

	if err := d.SetLimit(ctx, id, 512<<20); err != nil {
		t.Fatal(err)
	}
	if err := d.SetWeight(ctx, id, 3); err != nil {
		t.Fatal(err)
	}
	vmWant(t, "weight 21", d.SetWeight(ctx, id, 21), ErrInvalid, unix.EINVAL)
	vmWant(t, "limit 0", d.SetLimit(ctx, id, 0), ErrInvalid, unix.EINVAL)
	vmWant(t, "set on no instance", d.SetLimit(ctx, id+1000, 1), ErrNotFound, unix.ENOENT)
	if st, _ := d.Stats(ctx, id); st.MemLimit != 512<<20 || st.Weight != 3 {
		t.Errorf("after set: %+v", st)
	}

	ids, err := d.List(ctx)
	if err != nil || !slices.Equal(ids, []uint64{id}) {
		t.Errorf("list %v, %v; want [%d]", ids, err, id)
	}
	if err := d.Detach(ctx, id, cg); err != nil {
		t.Fatal(err)
	}
	vmWant(t, "detach twice", d.Detach(ctx, id, cg), ErrNotFound, unix.ENOENT)
	if err := d.Destroy(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	vmWant(t, "destroy twice", d.Destroy(ctx, id, false), ErrNotFound, unix.ENOENT)
	_, err = d.Stats(ctx, id)
	vmWant(t, "stats of a destroyed instance", err, ErrNotFound, unix.ENOENT)
}

// The 21st instance on a GPU is refused; List grows past its first buffer
// (160 ids) and returns every id in order.
func TestVMCapAndLongList(t *testing.T) {
	d := vmDevice(t)
	ctx := context.Background()
	var want []uint64
	for gpu := range uint32(10) {
		for i := range 20 {
			id, err := d.Create(ctx, CreateRequest{Name: fmt.Sprintf("kc-%d-%d", gpu, i), GPU: gpu, MemLimit: 1 << 20})
			if err != nil {
				t.Fatalf("create %d on GPU %d: %v", i, gpu, err)
			}
			want = append(want, id)
		}
		_, err := d.Create(ctx, CreateRequest{Name: fmt.Sprintf("kc-%d-21st", gpu), GPU: gpu, MemLimit: 1 << 20})
		if gpu == 0 {
			vmWant(t, "21st instance on GPU 0", err, ErrNoSpace, unix.ENOSPC)
		} else if !errors.Is(err, ErrNoSpace) {
			t.Errorf("21st on GPU %d: %v", gpu, err)
		}
	}
	got, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("list of %d ids, want the %d created in order", len(got), len(want))
	}
	t.Logf("list returned %d ids (first buffer %d)", len(got), listInitialCapacity)
	// Weights: one slot freed on GPU 0 takes weight 1, not 2.
	if err := d.Destroy(ctx, want[0], false); err != nil {
		t.Fatal(err)
	}
	_, err = d.Create(ctx, CreateRequest{Name: "kc-heavy", GPU: 0, MemLimit: 1 << 20, Weight: 2})
	vmWant(t, "weight 2 where 1 is free", err, ErrNoSpace, unix.ENOSPC)
}

// A process holding memory in the instance makes destroy and a lower
// limit fail with EBUSY; a forced destroy works.
func TestVMBusy(t *testing.T) {
	d := vmDevice(t)
	ctx := context.Background()
	fc, err := exec.LookPath("fakecuda")
	if err != nil {
		t.Skip("no fakecuda on PATH")
	}
	id, err := d.Create(ctx, CreateRequest{Name: "kc-busy", GPU: 0, MemLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dir, cg := vmCgroup(t, "kc_busy")
	if err := d.Attach(ctx, id, cg); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$1" alloc 16M hold 60`, dir, fc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	held := false
	for sc.Scan() {
		t.Log("fakecuda: " + sc.Text())
		if strings.Contains(sc.Text(), "holding") {
			held = true
			break
		}
	}
	if !held {
		t.Fatal("fakecuda ended before holding")
	}
	st, err := d.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.MemUsed < 16<<20 || st.Procs != 1 || st.Allocs == 0 || st.LiveAllocs == 0 || st.MemPeak < st.MemUsed {
		t.Errorf("stats while holding 16 MiB: %+v", st)
	}
	vmWant(t, "destroy while used", d.Destroy(ctx, id, false), ErrBusy, unix.EBUSY)
	vmWant(t, "limit below used", d.SetLimit(ctx, id, 1<<20), ErrBusy, unix.EBUSY)
	if st2, _ := d.Stats(ctx, id); st2.MemLimit != 64<<20 {
		t.Errorf("a refused set changed the limit to %d", st2.MemLimit)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := d.Stats(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.MemUsed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("used %d 10 s after the holder died", st.MemUsed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := d.Destroy(ctx, id, false); err != nil {
		t.Fatalf("destroy once idle: %v", err)
	}
}
