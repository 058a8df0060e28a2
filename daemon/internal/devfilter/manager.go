// Package devfilter keeps containers away from the device nodes that are not
// theirs: for each container cgroup a BPF_PROG_TYPE_CGROUP_DEVICE program,
// built with cilium/ebpf's asm package, that denies the NVIDIA GPU nodes not
// assigned to the container, /dev/nvidia-uvm-tools and /dev/cgpu, and allows
// everything else. It is attached as a cgroup bpf_link, which the kernel
// always attaches in BPF_F_ALLOW_MULTI mode: the runtime's own device
// program stays in place and a device opens only if every program allows
// it. The link is pinned in bpffs (<bpffs>/cgpu/devfilter-<cgroup id>), so
// the filter outlives the daemon that made it; a restarted daemon finds it
// again with Pinned and removes it with Remove.
//
// Two of the numbers a filter denies are not fixed: nvidia-uvm's major is
// dynamic (handed out when the module loads, and possibly another one after
// a reload), and so is cgpu.ko's misc minor. A program cannot look them up
// when it runs, so they are baked in when it is built, and a filter built
// before nvidia-uvm loaded would leave /dev/nvidia-uvm-tools open for good.
// Denying every dynamic major instead (234-254, 384-511) would take devices
// from containers that have every right to them. So the Manager remembers
// which numbers each filter was built with, Stale names the filters built
// with numbers that are no longer the host's (or that this process did not
// build, which after a restart is all of them), and whoever knows what each
// container may open (internal/instance) applies them again; Apply swaps
// the program of the pinned link in one step, so a container is never
// without a filter while that happens. Between a module load and the next
// check a filter lags: the caller checks every few seconds.
package devfilter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// ErrCgroupMismatch is returned by Apply when the cgroup path does not
// name the cgroup with the given id (the container's cgroup was removed
// and another made at the same path, or the caller mixed them up).
var ErrCgroupMismatch = errors.New("cgroup path and id disagree")

const (
	pinDir    = "cgpu"
	pinPrefix = "devfilter-"
	progName  = "cgpu_devfilter" // at most 15 bytes (BPF_OBJ_NAME_LEN)
)

// Manager attaches, replaces and removes device filters. Its methods are
// safe for concurrent use; they are serialized.
type Manager struct {
	bpffs      string
	procRoot   string
	sysRoot    string
	devRoot    string
	cgroupRoot string
	log        logrus.FieldLogger

	mu     sync.Mutex
	probed bool // Probe passed
	// built holds the numbers each filter was built with, by cgroup id,
	// for the filters this process applied.
	built map[uint64]devices
}

// Option configures a Manager.
type Option func(*Manager)

// WithBPFFS sets the bpffs mount the links are pinned under (default
// /sys/fs/bpf; pins go to <root>/cgpu/).
func WithBPFFS(root string) Option { return func(m *Manager) { m.bpffs = root } }

// WithProcRoot sets where /proc is (for /proc/devices).
func WithProcRoot(root string) Option { return func(m *Manager) { m.procRoot = root } }

// WithSysRoot sets where /sys is (for /sys/class/misc/cgpu/dev).
func WithSysRoot(root string) Option { return func(m *Manager) { m.sysRoot = root } }

// WithDevRoot sets where /dev is (for the /dev/cgpu node when sysfs lacks it).
func WithDevRoot(root string) Option { return func(m *Manager) { m.devRoot = root } }

// WithCgroupRoot sets the cgroup2 mount (default /sys/fs/cgroup); cgroup
// paths given to Apply that are not under it are taken relative to it.
func WithCgroupRoot(root string) Option { return func(m *Manager) { m.cgroupRoot = root } }

// WithLogger sets the logger (default: a logrus logger on stderr).
func WithLogger(l logrus.FieldLogger) Option { return func(m *Manager) { m.log = l } }

// New makes a Manager. It touches nothing on the host: the kernel checks
// happen in Probe, which Apply runs first.
func New(opts ...Option) (*Manager, error) {
	m := &Manager{
		bpffs:      "/sys/fs/bpf",
		procRoot:   "/proc",
		sysRoot:    "/sys",
		devRoot:    "/dev",
		cgroupRoot: "/sys/fs/cgroup",
		built:      map[uint64]devices{},
	}
	for _, o := range opts {
		o(m)
	}
	if m.log == nil {
		m.log = logrus.New()
	}
	for name, p := range map[string]string{"bpffs": m.bpffs, "proc": m.procRoot, "sys": m.sysRoot, "dev": m.devRoot, "cgroup": m.cgroupRoot} {
		if p == "" {
			return nil, fmt.Errorf("devfilter: empty %s root", name)
		}
	}
	m.cgroupRoot = filepath.Clean(m.cgroupRoot)
	return m, nil
}

// Probe checks once that this kernel and process can load device programs
// (removing the memlock rlimit that kernels before 5.11 charge BPF memory
// to) and that bpffs is mounted where the pins go. Apply calls it; the
// daemon may call it at start to fail early with the same message.
func (m *Manager) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.probe()
}

// probe remembers success only: a failure (bpffs not mounted yet) is
// tried again on the next call.
func (m *Manager) probe() error {
	if m.probed {
		return nil
	}
	// Without privilege both fail; the probe's error says more.
	memErr := rlimit.RemoveMemlock()
	if err := features.HaveProgramType(ebpf.CGroupDevice); err != nil {
		if memErr != nil {
			err = fmt.Errorf("%w (and raising the memlock rlimit failed: %v)", err, memErr)
		}
		return fmt.Errorf("device filter: cannot load BPF_PROG_TYPE_CGROUP_DEVICE programs (they need CONFIG_CGROUP_BPF and root, or CAP_BPF with CAP_NET_ADMIN): %w", err)
	}
	if memErr != nil {
		return fmt.Errorf("device filter: remove the memlock rlimit: %w", memErr)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.bpffs, &st); err != nil {
		return fmt.Errorf("device filter: bpffs at %s: %w", m.bpffs, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("device filter: %s is not a bpffs mount (mount -t bpf bpf %s)", m.bpffs, m.bpffs)
	}
	m.probed = true
	return nil
}

// Apply puts a filter on the cgroup at cgroupPath (absolute under the
// cgroup2 mount or relative to it), whose id is cgroupID, that lets the
// container open the GPU nodes /dev/nvidiaN for N in allowMinors and none
// of the others, nor /dev/nvidia-uvm-tools or /dev/cgpu. A filter already
// pinned for the cgroup has its program replaced in one step (the link is
// updated in place, so there is no moment without a filter).
func (m *Manager) Apply(ctx context.Context, cgroupPath string, cgroupID uint64, allowMinors []uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cgroupID == 0 {
		return fmt.Errorf("device filter for %s: cgroup id 0", cgroupPath)
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	dir := m.cgroupDir(cgroupPath)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("device filter for %s: not a directory", dir)
	}
	if st.Ino != cgroupID {
		return fmt.Errorf("device filter for %s: its id is %d, not %d: %w", dir, st.Ino, cgroupID, ErrCgroupMismatch)
	}

	if _, err := rules(allowMinors, devices{}); err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	if err := m.probe(); err != nil {
		return err
	}

	devs, err := resolveDevices(m.procRoot, m.sysRoot, m.devRoot)
	if err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	log := m.log.WithFields(logrus.Fields{"cgroup": dir, "cgroup_id": cgroupID})
	if devs.uvmToolsMajor == 0 {
		log.Warnf("device filter: %s is not in %s/devices (nvidia-uvm not loaded); /dev/nvidia-uvm-tools is not covered until it loads and the filter is applied again", uvmDeviceName, m.procRoot)
	}
	if devs.cgpuMajor == 0 {
		log.Warnf("device filter: no /dev/%s (cgpu.ko not loaded); it is not covered until it loads and the filter is applied again", cgpuDeviceName)
	}
	rs, err := rules(allowMinors, devs)
	if err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	insts, err := instructions(rs)
	if err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         progName,
		Type:         ebpf.CGroupDevice,
		AttachType:   ebpf.AttachCGroupDevice,
		Instructions: insts,
		License:      "GPL",
	})
	if err != nil {
		return fmt.Errorf("device filter for %s: load program: %w", dir, err)
	}
	// The link holds its own reference to the program.
	defer prog.Close()

	pin := m.pinPath(cgroupID)
	replaced, err := m.update(pin, cgroupID, prog)
	if err != nil {
		return fmt.Errorf("device filter for %s: %w", dir, err)
	}
	if !replaced {
		if err := m.attach(dir, pin, prog); err != nil {
			return fmt.Errorf("device filter for %s: %w", dir, err)
		}
	}
	m.built[cgroupID] = devs
	log.WithFields(logrus.Fields{"gpus": allowMinors, "replaced": replaced}).Debug("device filter applied")
	return nil
}

// Stale lists, ascending, the cgroups whose pinned filter was not built
// with the device numbers the host has now: nvidia-uvm or cgpu.ko loaded,
// unloaded or given other numbers since, or the filter made by another
// process (an earlier daemon), whose numbers this one cannot know. Apply
// them again to bring them up to date. An error means the host's numbers
// cannot be read, so no filter can be said to be current.
func (m *Manager) Stale(ctx context.Context) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	devs, err := resolveDevices(m.procRoot, m.sysRoot, m.devRoot)
	if err != nil {
		return nil, fmt.Errorf("device filters: %w", err)
	}
	pins, err := m.pinned()
	if err != nil {
		return nil, err
	}
	return m.staleLocked(pins, devs), nil
}

// staleLocked picks from pins those not built with devs, and forgets the
// numbers of filters that are no longer pinned; m.mu held.
func (m *Manager) staleLocked(pins []uint64, devs devices) []uint64 {
	var out []uint64
	live := make(map[uint64]bool, len(pins))
	for _, id := range pins {
		live[id] = true
		if b, ok := m.built[id]; !ok || b != devs {
			out = append(out, id)
		}
	}
	for id := range m.built {
		if !live[id] {
			delete(m.built, id)
		}
	}
	return out
}

// update swaps the program of the link pinned at pin, if there is one that
// is still attached to the cgroup. A pin whose link no longer works (its
// cgroup was removed, someone detached it) is removed so that attach can
// make a new one.
func (m *Manager) update(pin string, cgroupID uint64, prog *ebpf.Program) (bool, error) {
	l, err := link.LoadPinnedLink(pin, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open the pinned filter %s: %w", pin, err)
	}
	defer l.Close()
	if info, err := l.Info(); err == nil {
		if cg := info.Cgroup(); cg != nil && cg.CgroupId != 0 && cg.CgroupId != cgroupID {
			return false, fmt.Errorf("the filter pinned at %s belongs to cgroup %d", pin, cg.CgroupId)
		}
	}
	if err := l.Update(prog); err == nil {
		return true, nil
	} else if !errors.Is(err, unix.ENOLINK) {
		return false, fmt.Errorf("replace the pinned filter %s: %w", pin, err)
	}
	m.log.WithField("pin", pin).Info("device filter: the pinned link is detached; making a new one")
	if err := l.Unpin(); err != nil {
		return false, fmt.Errorf("remove the stale filter %s: %w", pin, err)
	}
	return false, nil
}

// attach links prog to the cgroup and pins the link. The link is closed
// (detached) again if it cannot be pinned: an unpinned link would vanish
// with this process.
func (m *Manager) attach(dir, pin string, prog *ebpf.Program) error {
	l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: ebpf.AttachCGroupDevice, Program: prog})
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("attach: %w (a device program attached without BPF_F_ALLOW_MULTI owns the cgroup?)", err)
		}
		return fmt.Errorf("attach: %w", err)
	}
	defer l.Close()
	if err := os.MkdirAll(filepath.Dir(pin), 0o700); err != nil {
		return fmt.Errorf("pin directory: %w", err)
	}
	if err := l.Pin(pin); err != nil {
		if errors.Is(err, link.ErrNotSupported) {
			return fmt.Errorf("pin the link: the kernel has no cgroup bpf_link (Linux 5.7+): %w", err)
		}
		return fmt.Errorf("pin the link at %s: %w", pin, err)
	}
	return nil
}

// Remove detaches and unpins the filter of the cgroup with id cgroupID.
// Removing a filter that is not there is not an error.
func (m *Manager) Remove(ctx context.Context, cgroupID uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pin := m.pinPath(cgroupID)
	// Looked up first so that removing nothing needs no bpf() call (and no
	// privilege).
	if _, err := os.Lstat(pin); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	l, err := link.LoadPinnedLink(pin, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove device filter of cgroup %d: %w", cgroupID, err)
	}
	defer l.Close()
	// Detach first so the filter goes even if some other process holds the
	// link open; a link whose cgroup is gone is detached already.
	if err := l.Detach(); err != nil && !errors.Is(err, link.ErrNotSupported) && !errors.Is(err, unix.ENOLINK) {
		return fmt.Errorf("remove device filter of cgroup %d: detach: %w", cgroupID, err)
	}
	if err := l.Unpin(); err != nil {
		return fmt.Errorf("remove device filter of cgroup %d: unpin: %w", cgroupID, err)
	}
	delete(m.built, cgroupID)
	return nil
}

// Pinned lists the ids of the cgroups that have a pinned filter, ascending.
// The names in the pin directory say which; nothing is loaded.
func (m *Manager) Pinned(ctx context.Context) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pinned()
}

// pinned does Pinned's work; m.mu held.
func (m *Manager) pinned() ([]uint64, error) {
	dir := filepath.Join(m.bpffs, pinDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list device filters: %w", err)
	}
	var ids []uint64
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), pinPrefix)
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(rest, 10, 64)
		if err != nil || id == 0 || strconv.FormatUint(id, 10) != rest {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (m *Manager) pinPath(cgroupID uint64) string {
	return filepath.Join(m.bpffs, pinDir, pinPrefix+strconv.FormatUint(cgroupID, 10))
}

// cgroupDir maps a cgroup path to its directory: a path under the cgroup2
// mount is used as it is, any other is taken relative to the mount.
func (m *Manager) cgroupDir(p string) string {
	p = filepath.Clean("/" + p)
	if p == m.cgroupRoot || strings.HasPrefix(p, m.cgroupRoot+"/") {
		return p
	}
	return filepath.Join(m.cgroupRoot, p)
}
