package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestContractDevice holds the real cgpu.ko, through Device, to the
// contract (contract_test.go). VM only: tests/vm/suites/kclient runs it as
// root with CGPU_VM=1 and fakecuda on PATH.
func TestContractDevice(t *testing.T) {
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs the real cgpu.ko as root: runs in the VM (tests/vm/run --suite kclient)")
	}
	fc, err := exec.LookPath("fakecuda")
	if err != nil {
		t.Fatalf("fakecuda, which plays the process holding memory: %v", err)
	}
	seq := 0
	runContract(t, func(t *testing.T) *contractEnv {
		seq++
		return newDeviceEnv(t, fc, seq)
	})
}

const procKM = "/proc/cgpu_km"

// newDeviceEnv opens /dev/cgpu twice: the Client the case drives (and may
// close) and one that cleans up after it: every instance goes, and every
// GPU whose max_inst the case wrote gets the default back.
func newDeviceEnv(t *testing.T, fakecuda string, seq int) *contractEnv {
	admin, err := New()
	if err != nil {
		t.Fatalf("open /dev/cgpu: %v", err)
	}
	var touched []uint32
	t.Cleanup(func() {
		ids, err := admin.List(bg)
		if err != nil {
			t.Errorf("cleanup: list: %v", err)
		}
		for _, id := range ids {
			if err := admin.Destroy(bg, id, true); err != nil {
				t.Errorf("cleanup: destroy %d: %v", id, err)
			}
		}
		for _, gpu := range touched {
			if err := writeMaxInst(gpu, MaxInstPerGPU); err != nil {
				t.Errorf("cleanup: max_inst of GPU %d back to %d: %v", gpu, MaxInstPerGPU, err)
			}
		}
		admin.Close()
	})
	if ids := list(t, admin); len(ids) != 0 {
		t.Fatalf("instances %v left before the case", ids)
	}
	k, err := New()
	if err != nil {
		t.Fatalf("open /dev/cgpu: %v", err)
	}
	t.Cleanup(func() { k.Close() })

	var mu sync.Mutex
	dirs := map[uint64]string{}
	n := 0
	removeCgroup := func(cg uint64) {
		mu.Lock()
		dir, ok := dirs[cg]
		delete(dirs, cg)
		mu.Unlock()
		if !ok {
			return
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove cgroup %s: %v", dir, err)
		}
	}
	return &contractEnv{
		k: k,
		cgroup: func() uint64 {
			mu.Lock()
			n++
			dir := filepath.Join("/sys/fs/cgroup", fmt.Sprintf("kc_contract_%d_%d", seq, n))
			mu.Unlock()
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Stat(dir, &st); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			dirs[st.Ino] = dir
			mu.Unlock()
			t.Cleanup(func() { removeCgroup(st.Ino) })
			return st.Ino
		},
		removeCgroup: removeCgroup,
		noCgroup:     0xdead0000beef,
		hold: func(id, cg, size uint64) func() {
			mu.Lock()
			dir, ok := dirs[cg]
			mu.Unlock()
			if !ok {
				t.Fatalf("hold: cgroup %d was not made by this case", cg)
			}
			return holdWithFakecuda(t, k, fakecuda, dir, id, size)
		},
		setGPUMaxInst: func(gpu, n uint32) error {
			err := writeMaxInst(gpu, n)
			if err == nil {
				touched = append(touched, gpu)
			}
			return err
		},
		unusedGPU: func() uint32 {
			if _, err := os.Stat(procKM); err != nil {
				t.Fatal(err)
			}
			for gpu := uint32(MaxGPUMinor); ; gpu-- {
				_, err := os.Stat(filepath.Join(procKM, strconv.Itoa(int(gpu))))
				if errors.Is(err, os.ErrNotExist) {
					return gpu
				}
				if gpu == 0 {
					t.Fatalf("every GPU minor has a %s directory", procKM)
				}
			}
		},
	}
}

func writeMaxInst(gpu, n uint32) error {
	return os.WriteFile(filepath.Join(procKM, strconv.Itoa(int(gpu)), "max_inst"), []byte(fmt.Sprintf("%d\n", n)), 0o644)
}

// holdWithFakecuda starts fakecuda in cgroup dir, allocating size bytes on
// GPU 0 and holding them, and returns once it says it holds them (it
// allocates before it says so). Its release kills fakecuda and waits until
// instance id holds nothing.
func holdWithFakecuda(t *testing.T, k *Device, fakecuda, dir string, id, size uint64) func() {
	t.Helper()
	cmd := exec.Command("sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$1" alloc "$2" hold 300`,
		dir, fakecuda, strconv.FormatUint(size, 10))
	out := &holdWatch{holding: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	release := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := k.Stats(bg, id)
				if errors.Is(err, ErrNotFound) {
					return // destroyed (forced) while held
				}
				if err != nil {
					t.Errorf("release: stats: %v", err)
					return
				}
				if st.MemUsed == 0 && st.Procs == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("release: 10 s after fakecuda died: %+v", st)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	select {
	case <-out.holding:
		t.Cleanup(release)
		return release
	case err := <-exited:
		exited <- err // for a release
		t.Fatalf("fakecuda ended (%v) before holding:\n%s", err, out.text())
	case <-time.After(60 * time.Second):
		release()
		t.Fatalf("fakecuda not holding after 60 s:\n%s", out.text())
	}
	return nil
}

// holdWatch keeps fakecuda's output and closes holding at its "holding"
// line.
type holdWatch struct {
	mu      sync.Mutex
	buf     strings.Builder
	holding chan struct{}
	seen    bool
}

func (w *holdWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && (strings.HasPrefix(w.buf.String(), "holding") || strings.Contains(w.buf.String(), "\nholding")) {
		w.seen = true
		close(w.holding)
	}
	return len(p), nil
}

func (w *holdWatch) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
