package devfilter

// The behaviour tests: a real cgroup, a real filter, a child process that
// opens each device. They need root, cgroup2, bpffs and nvmock.ko's nodes,
// so they run in the VM guest (tests/vm/suites/devfilter), where the suite
// sets CGPU_VM=1; anywhere else they skip. The kernel cannot test-run
// device programs, hence a process that opens the nodes.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

const (
	helperEnv = "CGPU_DEVFILTER_HELPER" // "open": the child that opens devices
	pathsEnv  = "CGPU_DEVFILTER_PATHS"  // the devices it opens, ':'-separated
	stateEnv  = "CGPU_VM_STATE"         // the file the restart tests share
	cgroup2   = "/sys/fs/cgroup"
)

// The nodes the guest has (nvmock.ko with two GPUs, cgpu.ko) and two the
// tests make: nvidia-modeset, which the mock lacks, and a spare name.
const (
	devGPU0     = "/dev/nvidia0"
	devGPU1     = "/dev/nvidia1"
	devCtl      = "/dev/nvidiactl"
	devUVM      = "/dev/nvidia-uvm"
	devUVMTools = "/dev/nvidia-uvm-tools"
	devCgpu     = "/dev/cgpu"
	devNull     = "/dev/null"
	devZero     = "/dev/zero"
	devModeset  = "/dev/nvidia-modeset"
)

// The open outcomes the tests tell apart: "ok", "EPERM" (the device
// cgroup refused) and "other" (the driver refused after the cgroup
// allowed, e.g. ENXIO for a minor nvmock does not serve).
const (
	ok    = "ok"
	eperm = "EPERM"
	other = "other"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "open" {
		os.Exit(openHelper())
	}
	os.Exit(m.Run())
}

// openHelper opens each device read-only and prints "PATH RESULT" lines.
func openHelper() int {
	for _, p := range strings.Split(os.Getenv(pathsEnv), ":") {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		switch {
		case err == nil:
			unix.Close(fd)
			fmt.Println(p, ok)
		case errors.Is(err, unix.EPERM):
			fmt.Println(p, eperm)
		default:
			fmt.Println(p, other, err)
		}
	}
	return 0
}

func vmOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("CGPU_VM") != "1" {
		t.Skip("needs root, cgroup2, bpffs and nvmock.ko: runs in the VM (tests/vm/run --suite devfilter sets CGPU_VM=1)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("CGPU_VM=1 but not root")
	}
	for _, p := range []string{devGPU0, devGPU1, devCtl, devUVM, devCgpu} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the guest lacks %s (nvmock.ko with 2 GPUs and cgpu.ko loaded?): %v", p, err)
		}
	}
	ensureNode(t, devUVMTools, uvmMajor(t), 1)
	ensureNode(t, devModeset, nvidiaMajor, 254)
}

func uvmMajor(t *testing.T) uint32 {
	t.Helper()
	f, err := os.Open("/proc/devices")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	majors, err := charMajors(f)
	if err != nil {
		t.Fatal(err)
	}
	if majors[uvmDeviceName] == 0 {
		t.Fatalf("no %s in /proc/devices", uvmDeviceName)
	}
	return majors[uvmDeviceName]
}

// ensureNode makes a character node when the driver did not.
func ensureNode(t *testing.T, path string, major, minor uint32) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(major, minor))); err != nil && !errors.Is(err, unix.EEXIST) {
		t.Fatalf("mknod %s %d:%d: %v", path, major, minor, err)
	}
}

// newCgroup makes a cgroup under parent (the cgroup2 root when "") and
// removes it when the test ends.
func newCgroup(t *testing.T, parent, name string) (string, uint64) {
	t.Helper()
	if parent == "" {
		parent = cgroup2
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("make cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove cgroup %s: %v", dir, err)
		}
	})
	return dir, cgroupID(t, dir)
}

func cgroupID(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// openFrom starts the helper in cgroup dir ("" = this process's cgroup)
// and returns what each open gave.
func openFrom(t *testing.T, dir string, paths ...string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=open", pathsEnv+"="+strings.Join(paths, ":"))
	cmd.Stderr = os.Stderr
	if dir != "" {
		cg, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer cg.Close()
		// clone3(CLONE_INTO_CGROUP): the child is in the cgroup from its
		// first instruction.
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("open helper in %q: %v", dir, err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			got[f[0]] = f[1]
		}
	}
	return got
}

// expectOpens checks what a process in dir gets for each device.
func expectOpens(t *testing.T, what, dir string, want map[string]string) {
	t.Helper()
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	got := openFrom(t, dir, paths...)
	for _, p := range paths {
		if got[p] != want[p] {
			t.Errorf("%s: open %s = %q, want %q", what, p, got[p], want[p])
		}
	}
}

// runtimeProgram stands for the container runtime's own device program:
// it allows everything but the device denyMajor:denyMinor (none when
// denyMajor is 0). It is attached the way runc attaches its program
// (BPF_PROG_ATTACH with flags) and detached when the test ends.
func runtimeProgram(t *testing.T, dir string, denyMajor, denyMinor uint32, flags uint32) {
	t.Helper()
	insts := asm.Instructions{
		asm.LoadMem(asm.R4, asm.R1, ctxMajor, asm.Word),
		asm.LoadMem(asm.R5, asm.R1, ctxMinor, asm.Word),
		asm.JNE.Imm(asm.R4, int32(denyMajor), "allow"),
		asm.JNE.Imm(asm.R5, int32(denyMinor), "allow"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("allow"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "runtime_devices", Type: ebpf.CGroupDevice, AttachType: ebpf.AttachCGroupDevice,
		Instructions: insts, License: "GPL",
	})
	if err != nil {
		t.Fatalf("load the runtime's program: %v", err)
	}
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = link.RawAttachProgram(link.RawAttachProgramOptions{
		Target: int(cg.Fd()), Program: prog, Attach: ebpf.AttachCGroupDevice, Flags: flags,
	})
	if err != nil {
		t.Fatalf("attach the runtime's program: %v", err)
	}
	t.Cleanup(func() {
		defer prog.Close()
		defer cg.Close()
		err := link.RawDetachProgram(link.RawDetachProgramOptions{Target: int(cg.Fd()), Program: prog, Attach: ebpf.AttachCGroupDevice})
		if err != nil {
			t.Errorf("detach the runtime's program: %v", err)
		}
	})
}

// attached counts the device programs attached to the cgroup itself.
func attached(t *testing.T, dir string) int {
	t.Helper()
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	res, err := link.QueryPrograms(link.QueryOptions{Target: int(cg.Fd()), Attach: ebpf.AttachCGroupDevice})
	if err != nil {
		t.Fatalf("query programs of %s: %v", dir, err)
	}
	return len(res.Programs)
}

func newManager(t *testing.T) *Manager {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	m, err := New(WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m
}

func pinned(t *testing.T, m *Manager, id uint64) bool {
	t.Helper()
	ids, err := m.Pinned(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(ids, id)
}

// allOpen is what a process without the filter gets.
func allOpen() map[string]string {
	return map[string]string{
		devGPU0: ok, devGPU1: ok, devCtl: ok, devUVM: ok, devUVMTools: ok,
		devCgpu: ok, devNull: ok, devModeset: other,
	}
}

func TestVMFilter(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir, id := newCgroup(t, "", "devfilter-filter")
	runtimeProgram(t, dir, 0, 0, unix.BPF_F_ALLOW_MULTI)
	expectOpens(t, "runtime's program only", dir, allOpen())

	m := newManager(t)
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "GPU 0 assigned", dir, map[string]string{
		devGPU0: ok, devGPU1: eperm, devCtl: ok, devUVM: ok, devUVMTools: eperm,
		devCgpu: eperm, devNull: ok, devModeset: other,
	})
	expectOpens(t, "outside the cgroup", "", allOpen())
	if n := attached(t, dir); n != 2 {
		t.Errorf("%d programs attached to the cgroup, want 2 (the runtime's and ours)", n)
	}
	if !pinned(t, m, id) {
		t.Errorf("Pinned lacks %d", id)
	}

	// Relative to the cgroup2 mount, the way the API may name it.
	if err := m.Apply(ctx, "/devfilter-filter", id, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "replaced by GPU 1", dir, map[string]string{devGPU0: eperm, devGPU1: ok, devUVMTools: eperm, devCgpu: eperm})
	if n := attached(t, dir); n != 2 {
		t.Errorf("after a replace %d programs attached, want 2 (the link is updated in place)", n)
	}
	if err := m.Apply(ctx, dir, id, []uint32{1, 0}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "GPUs 0 and 1", dir, map[string]string{devGPU0: ok, devGPU1: ok, devUVMTools: eperm})
	if err := m.Apply(ctx, dir, id, nil); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "no GPU", dir, map[string]string{devGPU0: eperm, devGPU1: eperm, devCtl: ok, devUVM: ok})

	if err := m.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "filter removed", dir, allOpen())
	if n := attached(t, dir); n != 1 {
		t.Errorf("after Remove %d programs attached, want 1 (the runtime's)", n)
	}
	if pinned(t, m, id) {
		t.Errorf("Pinned still lists %d after Remove", id)
	}
	if err := m.Remove(ctx, id); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// With BPF_F_ALLOW_MULTI every program must allow: the runtime's denial
// of /dev/zero holds with our filter next to it, and ours holds too.
func TestVMRuntimeDenialStands(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir, id := newCgroup(t, "", "devfilter-runtime")
	runtimeProgram(t, dir, 1, 5, unix.BPF_F_ALLOW_MULTI)
	m := newManager(t)
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "both programs", dir, map[string]string{devZero: eperm, devNull: ok, devGPU0: ok, devGPU1: eperm})
	if err := m.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "runtime's program only", dir, map[string]string{devZero: eperm, devNull: ok, devGPU1: ok})
}

// A runtime that attached its program exclusively (no ALLOW_MULTI) leaves
// no room for ours: Apply says so and leaves no pin behind.
func TestVMExclusiveRuntime(t *testing.T) {
	vmOnly(t)
	dir, id := newCgroup(t, "", "devfilter-exclusive")
	runtimeProgram(t, dir, 0, 0, 0)
	m := newManager(t)
	err := m.Apply(context.Background(), dir, id, []uint32{0})
	if err == nil {
		t.Fatal("Apply attached next to an exclusive program")
	}
	t.Logf("Apply: %v", err)
	if !strings.Contains(err.Error(), "ALLOW_MULTI") {
		t.Errorf("the error does not name the cause: %v", err)
	}
	if pinned(t, m, id) {
		t.Error("a failed Apply left a pin")
	}
}

// The container's own sub-cgroups are held by the filter too.
func TestVMNestedCgroup(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir, id := newCgroup(t, "", "devfilter-nested")
	child, _ := newCgroup(t, dir, "inner")
	m := newManager(t)
	if err := m.Apply(ctx, dir, id, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Remove(ctx, id) })
	expectOpens(t, "nested cgroup", child, map[string]string{devGPU0: eperm, devGPU1: ok, devCgpu: eperm})
}

// A cgroup removed under a filter (the container went without a Remove)
// leaves a pin that Pinned reports and Remove clears, and the id is
// refused if another cgroup is made at the same path.
func TestVMCgroupGone(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir := filepath.Join(cgroup2, "devfilter-gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := cgroupID(t, dir)
	m := newManager(t)
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if !pinned(t, m, id) {
		t.Errorf("Pinned lacks %d after its cgroup went", id)
	}
	again, newID := newCgroup(t, "", "devfilter-gone")
	if newID == id {
		t.Fatalf("the kernel reused cgroup id %d", id)
	}
	if err := m.Apply(ctx, again, id, []uint32{0}); !errors.Is(err, ErrCgroupMismatch) {
		t.Errorf("Apply with the old id on the new cgroup = %v, want ErrCgroupMismatch", err)
	}
	if err := m.Remove(ctx, id); err != nil {
		t.Fatalf("Remove after the cgroup went: %v", err)
	}
	if pinned(t, m, id) {
		t.Errorf("Pinned still lists %d", id)
	}
	expectOpens(t, "new cgroup, no filter", again, map[string]string{devGPU1: ok})
}

// A pin whose link someone detached (bpftool link detach) guards nothing;
// the next Apply notices and makes a new link.
func TestVMDetachedPinIsRebuilt(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir, id := newCgroup(t, "", "devfilter-detached")
	m := newManager(t)
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Remove(ctx, id) })
	l, err := link.LoadPinnedLink(m.pinPath(id), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Detach(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	expectOpens(t, "link detached", dir, map[string]string{devGPU1: ok})
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatalf("Apply over a detached pin: %v", err)
	}
	expectOpens(t, "after Apply", dir, map[string]string{devGPU0: ok, devGPU1: eperm})
	if n := attached(t, dir); n != 1 {
		t.Errorf("%d programs attached, want 1", n)
	}
}

// Without privilege the probe fails with a message that says what is
// missing, rather than a bare EPERM from the first load.
func TestVMProbeUnprivileged(t *testing.T) {
	if os.Getenv("CGPU_VM") == "1" && os.Getenv("CGPU_DEVFILTER_PROBE_CHILD") == "1" {
		m, err := New()
		if err != nil {
			t.Fatal(err)
		}
		err = m.Probe(context.Background())
		if err == nil {
			t.Fatal("Probe passed as nobody")
		}
		t.Logf("Probe as nobody: %v", err)
		if !strings.Contains(err.Error(), "BPF_PROG_TYPE_CGROUP_DEVICE") {
			t.Errorf("the error does not say what is missing: %v", err)
		}
		return
	}
	vmOnly(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestVMProbeUnprivileged$", "-test.v")
	cmd.Env = append(os.Environ(), "CGPU_DEVFILTER_PROBE_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("the unprivileged probe test failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestVMProbeUnprivileged") {
		t.Fatal("the child did not run the probe")
	}
}

// The restart tests run in two processes, as a daemon and its successor
// would: TestRestartApply leaves a cgroup with a filter and exits, the
// suite checks the filter still holds from the shell, TestRestartCheck
// finds it with Pinned and removes it. They share the file $CGPU_VM_STATE.
func restartOnly(t *testing.T) string {
	t.Helper()
	vmOnly(t)
	state := os.Getenv(stateEnv)
	if state == "" {
		t.Skip("the restart tests run from tests/vm/suites/devfilter/02-restart.sh, which sets " + stateEnv)
	}
	return state
}

func TestRestartApply(t *testing.T) {
	state := restartOnly(t)
	dir := filepath.Join(cgroup2, "devfilter-restart")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := cgroupID(t, dir)
	m := newManager(t)
	if err := m.Apply(context.Background(), dir, id, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "first daemon", dir, map[string]string{devGPU0: eperm, devGPU1: ok})
	if err := os.WriteFile(state, []byte(fmt.Sprintf("%s %d\n", dir, id)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRestartCheck(t *testing.T) {
	state := restartOnly(t)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("state %q", b)
	}
	dir := f[0]
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove cgroup: %v", err)
		}
	})
	m := newManager(t)
	if !pinned(t, m, id) {
		t.Fatalf("the new process's Pinned lacks %d", id)
	}
	expectOpens(t, "second daemon, before Remove", dir, map[string]string{devGPU0: eperm, devGPU1: ok, devCgpu: eperm})
	if err := m.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "second daemon, after Remove", dir, allOpen())
	if pinned(t, m, id) {
		t.Errorf("Pinned still lists %d", id)
	}
}

// modulesDir is where the guest keeps nvmock.ko and cgpu.ko
// (tests/vm/lib.sh: CGPU_MODULES).
const modulesDir = "/opt/cgpu/modules"

func runCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func moduleLoaded(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/module", name))
	return err == nil
}

// loadModules loads nvmock.ko (two GPUs, as the suite has it) and cgpu.ko
// on top, as tests/vm/lib.sh's reload_nvmock does.
func loadModules(t *testing.T) {
	t.Helper()
	if !moduleLoaded("nvmock") {
		runCmd(t, "insmod", filepath.Join(modulesDir, "nvmock.ko"), "num_gpus=2")
	}
	if !moduleLoaded("cgpu") {
		runCmd(t, "insmod", filepath.Join(modulesDir, "cgpu.ko"))
	}
}

// nvidia-uvm (with uvm-tools) and cgpu.ko loaded after a filter was made:
// the filter was built without their numbers and lets both through until
// it is applied again. Stale names it, and applied again it denies them
// (the instance Manager does so every few seconds, internal/instance).
func TestVMModulesLoadAfterFilter(t *testing.T) {
	vmOnly(t)
	ctx := context.Background()
	dir, id := newCgroup(t, "", "devfilter-late")
	m := newManager(t)
	t.Cleanup(func() { _ = m.Remove(ctx, id) })
	t.Cleanup(func() { loadModules(t) })
	runCmd(t, "rmmod", "cgpu")
	runCmd(t, "rmmod", "nvmock")

	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	if ids, err := m.Stale(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("Stale right after Apply = %v, %v; want none", ids, err)
	}
	loadModules(t)
	ensureNode(t, devUVMTools, uvmMajor(t), 1)
	expectOpens(t, "modules loaded after the filter was made", dir, map[string]string{
		devGPU0: ok, devGPU1: eperm, devUVMTools: ok, devCgpu: ok,
	})
	ids, err := m.Stale(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []uint64{id}) {
		t.Fatalf("Stale after the modules loaded = %v, want [%d]", ids, id)
	}
	if err := m.Apply(ctx, dir, id, []uint32{0}); err != nil {
		t.Fatal(err)
	}
	expectOpens(t, "applied again", dir, map[string]string{
		devGPU0: ok, devGPU1: eperm, devCtl: ok, devUVM: ok, devUVMTools: eperm, devCgpu: eperm,
	})
	if n := attached(t, dir); n != 1 {
		t.Errorf("%d programs attached, want 1 (the link is updated in place)", n)
	}
	if ids, err := m.Stale(ctx); err != nil || len(ids) != 0 {
		t.Errorf("Stale after applying again = %v, %v; want none", ids, err)
	}
}
