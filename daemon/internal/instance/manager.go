// Package instance is cgpud's core: the Manager validates and places
// instances, keeps their records (internal/state) in step with the kernel's
// instances (internal/kernel) and the containers' device filters, and
// repairs all three at start (Reconcile) and when a container's cgroup
// goes (Run).
//
// Crash safety rests on one rule: a record is on disk before the kernel or
// the filter is touched, and it names what it is about to do (state
// creating or destroying). Kernel instances are named <name>.<gpu index>,
// so Reconcile finds what an interrupted operation made even before its id
// was written. A create whose kernel instances and filter all exist is
// finished; any other is rolled back; a destroy is finished. That lets the
// last write of a create (state ready) and of a destroy (the delete) go
// without waiting for the disk: if they are lost, the next start comes to
// the same result. A create therefore costs one fsync'd write, and
// concurrent ones share it (the store groups commits).
//
// An instance whose limit cannot be made whole (its kernel instance cannot
// be made again or attached, or the kernel's limit cannot be set back to
// the record's) is kept and marked degraded, never dropped: its container
// is still running. While any is degraded, Health says so and Run
// reconciles again every WithRetry interval.
package instance

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// DeviceFilter keeps a container's cgroup from opening GPU nodes that are
// not its own (internal/devfilter implements it with eBPF).
type DeviceFilter interface {
	// Apply attaches (or replaces) the filter of a cgroup: it may open the
	// NVIDIA nodes of allowMinors only.
	Apply(ctx context.Context, cgroupPath string, cgroupID uint64, allowMinors []uint32) error
	// Remove detaches and unpins the cgroup's filter; none is fine.
	Remove(ctx context.Context, cgroupID uint64) error
	// Pinned lists the cgroups that have a filter.
	Pinned(ctx context.Context) ([]uint64, error)
	// Stale lists the cgroups whose filter was not built with the device
	// numbers the host has now (a driver module loaded or reloaded since,
	// or the filter made by an earlier process); Apply brings one up to
	// date.
	Stale(ctx context.Context) ([]uint64, error)
}

// DefaultModuleVersionFile is where cgpu.ko tells its version.
const DefaultModuleVersionFile = "/proc/cgpu_km/version"

// recordStore is what the Manager needs of *state.Store (tests wrap it).
type recordStore interface {
	Put(ctx context.Context, rec state.Record) error
	PutNoWait(rec state.Record) <-chan error
	Delete(ctx context.Context, name string) error
	DeleteNoWait(name string) <-chan error
	List(ctx context.Context) ([]state.Record, error)
	Sync(ctx context.Context) error
}

var _ recordStore = (*state.Store)(nil)

// Option configures a Manager.
type Option func(*Manager)

// WithKernel sets the kernel client; without one every change fails with
// ErrUnavailable.
func WithKernel(k kernel.Client) Option { return func(m *Manager) { m.kernel = k } }

// WithInventory sets the GPUs.
func WithInventory(inv gpu.Inventory) Option { return func(m *Manager) { m.inv = inv } }

// WithDiscoverer finds the GPUs at each Reconcile (replacing WithInventory's).
func WithDiscoverer(d gpu.Discoverer) Option { return func(m *Manager) { m.disc = d } }

// WithStore sets the record store (required).
func WithStore(s *state.Store) Option { return func(m *Manager) { m.store = s } }

// WithDeviceFilter sets the device filter; nil (the default) disables it.
func WithDeviceFilter(f DeviceFilter) Option { return func(m *Manager) { m.filter = f } }

// WithCgroups sets the cgroup resolver (default: cgroup.New(), the host's
// /sys/fs/cgroup).
func WithCgroups(r *cgroup.Resolver) Option { return func(m *Manager) { m.cgroups = r } }

// WithWatcher sets the cgroup watcher Run uses (default: a new one on the
// resolver, with WithSweep's interval).
func WithWatcher(w *cgroup.Watcher) Option { return func(m *Manager) { m.watcher = w } }

// WithSweep sets the default watcher's sweep interval.
func WithSweep(d time.Duration) Option { return func(m *Manager) { m.sweep = d } }

// DefaultRetry is how often Run reconciles again while something is
// degraded.
const DefaultRetry = 30 * time.Second

// WithRetry sets how often Run reconciles again while an instance is
// degraded or kernel instances are kept unclaimed (default DefaultRetry).
func WithRetry(d time.Duration) Option { return func(m *Manager) { m.retry = d } }

// DefaultFilterRefresh is how often Run looks for device filters built
// with device numbers the host no longer has.
const DefaultFilterRefresh = 5 * time.Second

// WithFilterRefresh sets how often Run applies again the device filters
// that are stale (default DefaultFilterRefresh; 0 only at Run's start and
// on RefreshFiltersSoon).
func WithFilterRefresh(d time.Duration) Option { return func(m *Manager) { m.filterEvery = d } }

// WithLogger sets the logger.
func WithLogger(l logrus.FieldLogger) Option { return func(m *Manager) { m.log = l } }

// WithClock sets the clock (creation times).
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithPlacement sets the placement for creates that name neither GPUs nor
// a placement: v1.PlacementBinpack (default) or v1.PlacementSpread.
func WithPlacement(p string) Option { return func(m *Manager) { m.placement = p } }

// WithNode sets the node name and address Inspect reports (default: the
// host name, and no address).
func WithNode(name, address string) Option {
	return func(m *Manager) { m.node, m.address = name, address }
}

// WithModuleVersionFile sets where the module's version is read
// (default DefaultModuleVersionFile).
func WithModuleVersionFile(path string) Option { return func(m *Manager) { m.modVersionFile = path } }

// withRecordStore replaces the store behind the Manager (tests).
func withRecordStore(s recordStore) Option { return func(m *Manager) { m.records = s } }

// Manager owns the node's instances. Safe for concurrent use: operations on
// different instances run in parallel (the lock that guards the accounting
// is never held across the disk or the kernel); those on one instance run
// one at a time.
type Manager struct {
	kernel         kernel.Client
	inv            gpu.Inventory
	disc           gpu.Discoverer
	store          *state.Store
	records        recordStore
	filter         DeviceFilter
	cgroups        *cgroup.Resolver
	watcher        *cgroup.Watcher
	sweep          time.Duration
	retry          time.Duration
	filterEvery    time.Duration
	filterKick     chan struct{} // RefreshFiltersSoon
	log            logrus.FieldLogger
	now            func() time.Time
	placement      string
	node, address  string
	modVersionFile string

	// recon is held shared by every operation and exclusively by
	// Reconcile, which rebuilds the maps below.
	recon sync.RWMutex

	mu         sync.Mutex // guards the fields below
	byName     map[string]*entry
	byCgroup   map[uint64]*entry
	load       map[int]*gpuLoad // by GPU index
	maxInst    uint32           // 0 until the kernel told
	lastRec    error            // last Reconcile's error
	reconciled bool
	// orphans are kernel instances named like ours that no record claims
	// and that the last Reconcile kept, attached to cgroups it could not
	// tell apart: "<kernel name>: <why>".
	orphans []string
	// filterErr is the last refresh's error: a device filter that could
	// not be brought up to date with the host's device numbers.
	filterErr error
}

// entry is one instance in memory. op serialises the operations on it; rec,
// gone and problem are guarded by Manager.mu.
type entry struct {
	op   sync.Mutex
	rec  state.Record
	gone bool
	// problem says why the instance is degraded (see Reconcile); empty
	// when it is whole.
	problem string
}

type gpuLoad struct {
	n      int
	mem    uint64
	weight uint32
}

// New returns a Manager. Call Reconcile before serving, then Run.
func New(opts ...Option) (*Manager, error) {
	m := &Manager{
		sweep:          cgroup.DefaultSweep,
		retry:          DefaultRetry,
		filterEvery:    DefaultFilterRefresh,
		filterKick:     make(chan struct{}, 1),
		now:            time.Now,
		placement:      v1.PlacementBinpack,
		modVersionFile: DefaultModuleVersionFile,
		byName:         map[string]*entry{},
		byCgroup:       map[uint64]*entry{},
		load:           map[int]*gpuLoad{},
	}
	for _, o := range opts {
		o(m)
	}
	if m.records == nil {
		if m.store == nil {
			return nil, fmt.Errorf("instance manager: no state store")
		}
		m.records = m.store
	}
	if m.log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		m.log = l
	}
	if m.cgroups == nil {
		m.cgroups = cgroup.New()
	}
	if m.placement != v1.PlacementBinpack && m.placement != v1.PlacementSpread {
		return nil, fmt.Errorf("instance manager: placement %q: want %s or %s", m.placement, v1.PlacementBinpack, v1.PlacementSpread)
	}
	if m.node == "" {
		m.node, _ = os.Hostname()
	}
	if m.watcher == nil {
		w, err := cgroup.NewWatcher(m.cgroups, cgroup.WithSweep(m.sweep))
		if err != nil {
			return nil, fmt.Errorf("instance manager: %w", err)
		}
		m.watcher = w
	}
	return m, nil
}

// kernelName is the kernel instance of name on GPU index.
func kernelName(name string, index int) string { return fmt.Sprintf("%s.%d", name, index) }

// ourKernelName says whether a kernel instance is named as kernelName
// names them: an instance name, ".", a GPU index of one to three digits.
func ourKernelName(k string) bool {
	i := strings.LastIndexByte(k, '.')
	if i < 0 || v1.ValidName(k[:i]) != nil {
		return false
	}
	idx := k[i+1:]
	if len(idx) < 1 || len(idx) > 3 {
		return false
	}
	for j := 0; j < len(idx); j++ {
		if idx[j] < '0' || idx[j] > '9' {
			return false
		}
	}
	return true
}

// maxInstances is the per-GPU cap, asked of the kernel once.
func (m *Manager) maxInstances(ctx context.Context) (uint32, error) {
	m.mu.Lock()
	n := m.maxInst
	m.mu.Unlock()
	if n != 0 {
		return n, nil
	}
	if m.kernel == nil {
		return 0, errf(ErrUnavailable, kernel.ErrNoModule, "kernel")
	}
	v, err := m.kernel.Version(ctx)
	if err != nil {
		return 0, errf(ErrUnavailable, err, "kernel version")
	}
	m.mu.Lock()
	m.maxInst = v.MaxInst
	m.mu.Unlock()
	return v.MaxInst, nil
}

// gpuByIndex finds a GPU of the inventory.
func (m *Manager) gpuByIndex(index int) (gpu.GPU, bool) {
	for _, g := range m.inv.GPUs {
		if g.Index == index {
			return g, true
		}
	}
	return gpu.GPU{}, false
}

// loadOf returns GPU index's accounting; m.mu held.
func (m *Manager) loadOf(index int) *gpuLoad {
	l := m.load[index]
	if l == nil {
		l = &gpuLoad{}
		m.load[index] = l
	}
	return l
}

// addLocked enters e in the maps and charges its GPUs; m.mu held.
func (m *Manager) addLocked(e *entry) {
	m.byName[e.rec.Name] = e
	m.byCgroup[e.rec.CgroupID] = e
	for _, s := range e.rec.Slots {
		l := m.loadOf(s.GPU)
		l.n++
		l.mem += e.rec.Memory
		l.weight += e.rec.Weight
	}
}

// removeLocked undoes addLocked; m.mu held.
func (m *Manager) removeLocked(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	if m.byName[e.rec.Name] == e {
		delete(m.byName, e.rec.Name)
	}
	if m.byCgroup[e.rec.CgroupID] == e {
		delete(m.byCgroup, e.rec.CgroupID)
	}
	for _, s := range e.rec.Slots {
		l := m.loadOf(s.GPU)
		l.n--
		l.mem -= e.rec.Memory
		l.weight -= e.rec.Weight
	}
}

// lookup finds name's entry and takes its operation lock; the caller
// unlocks e.op. A destroyed entry is not found.
func (m *Manager) lookup(name string) (*entry, error) {
	m.mu.Lock()
	e := m.byName[name]
	m.mu.Unlock()
	if e == nil {
		return nil, errf(ErrNotFound, nil, "instance %q not found", name)
	}
	e.op.Lock()
	m.mu.Lock()
	gone := e.gone
	m.mu.Unlock()
	if gone {
		e.op.Unlock()
		return nil, errf(ErrNotFound, nil, "instance %q not found", name)
	}
	return e, nil
}

// settle waits for a write queued without waiting and logs its failure:
// the operation has already answered, and the next start repairs what the
// lost write would have said.
func (m *Manager) settle(what string, done <-chan error) {
	go func() {
		if err := <-done; err != nil {
			m.log.WithError(err).Warnf("state write (%s) failed; the next start repairs it", what)
		}
	}()
}
