package kernel

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Fake is an in-memory Client with the module's rules: names unique, at
// most max_inst instances per GPU and their weights summing to at most
// max_inst, a cgroup bound to at most one instance per GPU, no destroy of
// an instance that holds memory unless forced, no limit below the memory in
// use. Its errors are the Device's (errors.Is matches the sentinel and the
// errno). The contract tests (contract_test.go) hold it to cgpu.ko: the
// same cases run against the module in the VM. Safe for concurrent use.
// The Set*/Fail* methods are test hooks.
type Fake struct {
	mu      sync.Mutex
	maxInst uint32
	perGPU  map[uint32]uint32 // GPU -> its max_inst, from its first create on
	cgroup  func(id uint64) bool
	nextID  uint64
	insts   map[uint64]*fakeInst
	names   map[string]uint64
	bound   map[fakeBinding]uint64 // (cgroup, gpu) -> instance
	failOps map[string][]error
	closed  bool
	calls   int
}

type fakeInst struct {
	st      Stats
	cgroups map[uint64]struct{}
}

type fakeBinding struct {
	cgroup uint64
	gpu    uint32
}

var _ Client = (*Fake)(nil)

// FakeOption configures a Fake.
type FakeOption func(*Fake)

// WithMaxInst sets the module parameter max_inst (default 20).
func WithMaxInst(n uint32) FakeOption { return func(f *Fake) { f.maxInst = n } }

// WithCgroupExists decides which cgroup ids Attach accepts (the kernel
// accepts only live cgroups); by default every id but 0.
func WithCgroupExists(exists func(id uint64) bool) FakeOption {
	return func(f *Fake) { f.cgroup = exists }
}

// NewFake returns an empty Fake.
func NewFake(opts ...FakeOption) *Fake {
	f := &Fake{
		maxInst: MaxInstPerGPU,
		perGPU:  map[uint32]uint32{},
		cgroup:  func(id uint64) bool { return id != 0 },
		nextID:  1,
		insts:   map[uint64]*fakeInst{},
		names:   map[string]uint64{},
		bound:   map[fakeBinding]uint64{},
		failOps: map[string][]error{},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// begin takes the lock and returns why op is not done: the client is
// closed, ctx is done (as Device, which then makes no call), or a failure
// was injected. The caller unlocks.
func (f *Fake) begin(ctx context.Context, op string) error {
	f.mu.Lock()
	f.calls++
	if f.closed {
		return fmt.Errorf("cgpu %s: %w", op, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cgpu %s: %w", op, err)
	}
	if q := f.failOps[op]; len(q) > 0 {
		err := q[0]
		f.failOps[op] = q[1:]
		return err
	}
	return nil
}

// gpuMax is the max_inst of gpu. As the module, the Fake gives a GPU its
// own, from the module parameter, at its first create.
func (f *Fake) gpuMax(gpu uint32) uint32 {
	n, ok := f.perGPU[gpu]
	if !ok {
		n = f.maxInst
		f.perGPU[gpu] = n
	}
	return n
}

// gpuLoad is the number of instances on gpu and the sum of their weights.
func (f *Fake) gpuLoad(gpu uint32) (n, weights uint32) {
	for _, in := range f.insts {
		if in.st.GPU == gpu {
			n++
			weights += in.st.Weight
		}
	}
	return n, weights
}

// Version implements Client.
func (f *Fake) Version(ctx context.Context) (Version, error) {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "version"); err != nil {
		return Version{}, err
	}
	return Version{ABIMajor: ABIMajor, ABIMinor: ABIMinor, MaxInst: f.maxInst, NameLen: NameLen}, nil
}

// Create implements Client.
func (f *Fake) Create(ctx context.Context, req CreateRequest) (uint64, error) {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "create"); err != nil {
		return 0, err
	}
	if err := validCreate(req); err != nil {
		return 0, invalid("create", err)
	}
	detail := fmt.Sprintf("%q on GPU %d", req.Name, req.GPU)
	if _, ok := f.names[req.Name]; ok {
		return 0, errnoError("create", detail, unix.EEXIST)
	}
	w := req.Weight
	if w == 0 {
		w = 1
	}
	n, weights := f.gpuLoad(req.GPU)
	if max := f.gpuMax(req.GPU); n >= max || weights+w > max {
		return 0, errnoError("create", detail, unix.ENOSPC)
	}
	id := f.nextID
	f.nextID++
	f.insts[id] = &fakeInst{
		st:      Stats{ID: id, Name: req.Name, GPU: req.GPU, Weight: w, MemLimit: req.MemLimit},
		cgroups: map[uint64]struct{}{},
	}
	f.names[req.Name] = id
	return id, nil
}

// validCreate checks what the module checks before it looks at its state.
func validCreate(req CreateRequest) error {
	if err := ValidName(req.Name); err != nil {
		return err
	}
	if req.GPU > MaxGPUMinor {
		return fmt.Errorf("GPU minor %d above %d", req.GPU, MaxGPUMinor)
	}
	if req.MemLimit == 0 || req.MemLimit > MemLimitMax {
		return fmt.Errorf("memory limit %d outside 1..%d", req.MemLimit, MemLimitMax)
	}
	if req.Weight > MaxInstPerGPU {
		return fmt.Errorf("weight %d above %d", req.Weight, MaxInstPerGPU)
	}
	return nil
}

// Destroy implements Client.
func (f *Fake) Destroy(ctx context.Context, id uint64, force bool) error {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "destroy"); err != nil {
		return err
	}
	in, ok := f.insts[id]
	if !ok {
		return errnoError("destroy", fmt.Sprintf("instance %d", id), unix.ENOENT)
	}
	if in.st.MemUsed > 0 && !force {
		return errnoError("destroy", fmt.Sprintf("instance %d", id), unix.EBUSY)
	}
	for cg := range in.cgroups {
		delete(f.bound, fakeBinding{cg, in.st.GPU})
	}
	delete(f.names, in.st.Name)
	delete(f.insts, id)
	return nil
}

// Attach implements Client.
func (f *Fake) Attach(ctx context.Context, id, cgroupID uint64) error {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "attach"); err != nil {
		return err
	}
	detail := fmt.Sprintf("cgroup %d to instance %d", cgroupID, id)
	if !f.cgroup(cgroupID) {
		return errnoError("attach", detail, unix.ENOENT)
	}
	in, ok := f.insts[id]
	if !ok {
		return errnoError("attach", detail, unix.ENOENT)
	}
	b := fakeBinding{cgroupID, in.st.GPU}
	if _, ok := f.bound[b]; ok {
		return errnoError("attach", detail, unix.EEXIST)
	}
	f.bound[b] = id
	in.cgroups[cgroupID] = struct{}{}
	in.st.Cgroups = uint32(len(in.cgroups))
	return nil
}

// Detach implements Client.
func (f *Fake) Detach(ctx context.Context, id, cgroupID uint64) error {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "detach"); err != nil {
		return err
	}
	in, ok := f.insts[id]
	if !ok {
		return errnoError("detach", fmt.Sprintf("cgroup %d from instance %d", cgroupID, id), unix.ENOENT)
	}
	if _, ok := in.cgroups[cgroupID]; !ok {
		return errnoError("detach", fmt.Sprintf("cgroup %d from instance %d", cgroupID, id), unix.ENOENT)
	}
	delete(in.cgroups, cgroupID)
	delete(f.bound, fakeBinding{cgroupID, in.st.GPU})
	in.st.Cgroups = uint32(len(in.cgroups))
	return nil
}

// SetLimit implements Client.
func (f *Fake) SetLimit(ctx context.Context, id, memLimit uint64) error {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "set"); err != nil {
		return err
	}
	if memLimit == 0 || memLimit > MemLimitMax {
		return invalid("set", fmt.Errorf("memory limit %d outside 1..%d", memLimit, MemLimitMax))
	}
	in, ok := f.insts[id]
	if !ok {
		return errnoError("set", fmt.Sprintf("limit of instance %d", id), unix.ENOENT)
	}
	if memLimit < in.st.MemUsed {
		return errnoError("set", fmt.Sprintf("limit of instance %d to %d below %d in use", id, memLimit, in.st.MemUsed), unix.EBUSY)
	}
	in.st.MemLimit = memLimit
	return nil
}

// SetWeight implements Client.
func (f *Fake) SetWeight(ctx context.Context, id uint64, weight uint32) error {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "set"); err != nil {
		return err
	}
	if weight == 0 || weight > MaxInstPerGPU {
		return invalid("set", fmt.Errorf("weight %d outside 1..%d", weight, MaxInstPerGPU))
	}
	in, ok := f.insts[id]
	if !ok {
		return errnoError("set", fmt.Sprintf("weight of instance %d", id), unix.ENOENT)
	}
	_, weights := f.gpuLoad(in.st.GPU)
	if weights-in.st.Weight+weight > f.gpuMax(in.st.GPU) {
		return errnoError("set", fmt.Sprintf("weight of instance %d to %d", id, weight), unix.ENOSPC)
	}
	in.st.Weight = weight
	return nil
}

// Stats implements Client.
func (f *Fake) Stats(ctx context.Context, id uint64) (Stats, error) {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "stats"); err != nil {
		return Stats{}, err
	}
	in, ok := f.insts[id]
	if !ok {
		return Stats{}, errnoError("stats", fmt.Sprintf("instance %d", id), unix.ENOENT)
	}
	return in.st, nil
}

// List implements Client.
func (f *Fake) List(ctx context.Context) ([]uint64, error) {
	defer f.mu.Unlock()
	if err := f.begin(ctx, "list"); err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(f.insts))
	for id := range f.insts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Close implements Client; later calls fail.
func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// SetUsage plays the processes of instance id: used bytes held now by
// procs processes (peak, allocation counters and live allocations follow).
func (f *Fake) SetUsage(id, used uint64, procs uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.insts[id]
	if !ok {
		return errnoError("set usage", fmt.Sprintf("instance %d", id), unix.ENOENT)
	}
	if used > in.st.MemUsed {
		in.st.Allocs++
		in.st.LiveAllocs++
	} else if used < in.st.MemUsed && in.st.LiveAllocs > 0 {
		in.st.LiveAllocs--
	}
	if used == 0 {
		in.st.LiveAllocs = 0
	}
	in.st.MemUsed = used
	in.st.MemPeak = max(in.st.MemPeak, used)
	in.st.Procs = procs
	return nil
}

// SetRefused sets instance id's refused allocation and managed-mapping
// counters.
func (f *Fake) SetRefused(id, allocs, managed uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.insts[id]
	if !ok {
		return errnoError("set refused", fmt.Sprintf("instance %d", id), unix.ENOENT)
	}
	in.st.RefusedAllocs, in.st.RefusedManaged = allocs, managed
	return nil
}

// SetGPUMaxInst is a write of /proc/cgpu_km/<gpu>/max_inst, with its
// errors: ENOENT before the GPU's first instance (the file is not there
// yet), EINVAL outside 1..20, EBUSY below the GPU's instances or weights.
func (f *Fake) SetGPUMaxInst(gpu, n uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	detail := fmt.Sprintf("of GPU %d to %d", gpu, n)
	if _, ok := f.perGPU[gpu]; !ok {
		return errnoError("max_inst", detail, unix.ENOENT)
	}
	if n == 0 || n > MaxInstPerGPU {
		return errnoError("max_inst", detail, unix.EINVAL)
	}
	if nr, weights := f.gpuLoad(gpu); n < nr || n < weights {
		return errnoError("max_inst", detail, unix.EBUSY)
	}
	f.perGPU[gpu] = n
	return nil
}

// FailNext makes the next call of op ("version", "create", "destroy",
// "attach", "detach", "set", "stats", "list") return err without doing
// anything; calls queue.
func (f *Fake) FailNext(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failOps[op] = append(f.failOps[op], err)
}

// Calls counts the Client calls made so far.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Reset drops every instance, binding and per-GPU max_inst, as a module
// reload does; ids keep growing.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.perGPU)
	clear(f.insts)
	clear(f.names)
	clear(f.bound)
}
