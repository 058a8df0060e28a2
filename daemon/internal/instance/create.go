package instance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// maxContainerIDLen bounds container ids (runtimes use 64 hex digits).
const maxContainerIDLen = 256

// createErr is a refused create, worded as ACK's cGPU words it.
func createErr(kind, cause error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: v1.ErrorPrefixCreate + fmt.Sprintf(format, args...), Cause: cause}
}

// defaultName derives a free name from a container id: its first 12 name
// characters, then -2, -3, ... if taken; m.mu held.
func (m *Manager) defaultNameLocked(containerID string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(containerID) && b.Len() < 12; i++ {
		if c := containerID[i]; v1.NameChar(c) {
			b.WriteByte(c)
		}
	}
	base := strings.Trim(b.String(), ".")
	if base == "" {
		base = "cgpu"
	}
	for i := 1; i <= 1000; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		if m.byName[name] == nil {
			return name, nil
		}
	}
	return "", fmt.Errorf("no free name derived from container %q", containerID)
}

func human(b uint64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	default:
		return fmt.Sprintf("%d bytes", b)
	}
}

// checkRequest validates what needs no state.
func checkRequest(req *v1.CreateRequest, maxInst uint32, defPlacement string) error {
	if req.Name != "" {
		if err := v1.ValidName(req.Name); err != nil {
			return createErr(ErrInvalid, nil, "%v", err)
		}
	}
	if req.ContainerID == "" && req.Name == "" {
		return createErr(ErrInvalid, nil, "a container id or a name is required")
	}
	if len(req.ContainerID) > maxContainerIDLen {
		return createErr(ErrInvalid, nil, "container id longer than %d characters", maxContainerIDLen)
	}
	for _, r := range req.ContainerID {
		if r <= ' ' || r == 0x7f {
			return createErr(ErrInvalid, nil, "container id %q has a space or control character", req.ContainerID)
		}
	}
	if req.Cgroup == "" {
		return createErr(ErrInvalid, nil, "a cgroup is required")
	}
	if err := v1.ValidMemory(req.Memory); err != nil {
		return createErr(ErrInvalid, nil, "%v", err)
	}
	if req.Weight == 0 {
		req.Weight = 1
	}
	if req.Weight > maxInst {
		return createErr(ErrInvalid, nil, "weight %d is outside 1..%d", req.Weight, maxInst)
	}
	switch req.Placement {
	case "":
		req.Placement = defPlacement
	case v1.PlacementBinpack, v1.PlacementSpread:
	default:
		return createErr(ErrInvalid, nil, "placement %q: want %s or %s", req.Placement, v1.PlacementBinpack, v1.PlacementSpread)
	}
	if len(req.GPUs) > 0 {
		req.Placement = ""
	}
	return nil
}

// findGPU resolves an index or a UUID.
func (m *Manager) findGPU(s string) (gpu.GPU, error) {
	if i, err := strconv.Atoi(s); err == nil {
		if g, ok := m.gpuByIndex(i); ok {
			return g, nil
		}
		return gpu.GPU{}, createErr(ErrInvalid, nil, "no GPU %d on this node", i)
	}
	for _, g := range m.inv.GPUs {
		if strings.EqualFold(g.UUID, s) || strings.EqualFold(strings.TrimPrefix(g.UUID, "GPU-"), s) {
			return g, nil
		}
	}
	return gpu.GPU{}, createErr(ErrInvalid, nil, "no GPU %q on this node", s)
}

// fitLocked says why one more instance of mem bytes and weight w does not
// fit on g, or nil; m.mu held.
func (m *Manager) fitLocked(g gpu.GPU, mem uint64, w, maxInst uint32) error {
	if mem > g.MemoryTotal {
		return createErr(ErrInvalid, nil, "GPU %d has %s in all, less than the %s asked", g.Index, human(g.MemoryTotal), human(mem))
	}
	l := m.loadOf(g.Index)
	if uint32(l.n) >= maxInst {
		return createErr(ErrNoSpace, nil, "GPU %d has %d instances, the most a GPU takes", g.Index, l.n)
	}
	if l.weight+w > maxInst {
		return createErr(ErrNoSpace, nil, "GPU %d's weights would sum to %d, above %d", g.Index, l.weight+w, maxInst)
	}
	if free := g.MemoryTotal - min(l.mem, g.MemoryTotal); mem > free {
		return createErr(ErrNoSpace, nil, "GPU %d has %s unallocated, less than the %s asked", g.Index, human(free), human(mem))
	}
	return nil
}

// placeLocked picks the GPUs of a create; m.mu held.
func (m *Manager) placeLocked(req v1.CreateRequest, maxInst uint32) ([]gpu.GPU, error) {
	if len(req.GPUs) > 0 {
		var gs []gpu.GPU
		seen := map[int]bool{}
		for _, s := range req.GPUs {
			g, err := m.findGPU(s)
			if err != nil {
				return nil, err
			}
			if seen[g.Index] {
				return nil, createErr(ErrInvalid, nil, "GPU %d named twice", g.Index)
			}
			seen[g.Index] = true
			if err := m.fitLocked(g, req.Memory, req.Weight, maxInst); err != nil {
				return nil, err
			}
			gs = append(gs, g)
		}
		return gs, nil
	}
	if len(m.inv.GPUs) == 0 {
		return nil, createErr(ErrUnavailable, nil, "no GPU found on this node")
	}
	var best *gpu.GPU
	var firstErr error
	for i := range m.inv.GPUs {
		g := &m.inv.GPUs[i]
		if err := m.fitLocked(*g, req.Memory, req.Weight, maxInst); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if best == nil || m.better(req.Placement, g, best) {
			best = g
		}
	}
	if best == nil {
		if len(m.inv.GPUs) == 1 {
			return nil, firstErr
		}
		var largest uint64
		for _, g := range m.inv.GPUs {
			largest = max(largest, g.MemoryTotal)
		}
		if req.Memory > largest {
			return nil, createErr(ErrInvalid, nil, "no GPU has %s in all (the largest has %s)", human(req.Memory), human(largest))
		}
		return nil, createErr(ErrNoSpace, nil, "no GPU has room for %s (the first: %s)", human(req.Memory), strings.TrimPrefix(firstErr.Error(), v1.ErrorPrefixCreate))
	}
	return []gpu.GPU{*best}, nil
}

// better says whether a beats b under placement p: binpack fills the most
// allocated GPU first, spread the least; ties go to fewer instances, then
// to the lower index.
func (m *Manager) better(p string, a, b *gpu.GPU) bool {
	la, lb := m.loadOf(a.Index), m.loadOf(b.Index)
	if la.mem != lb.mem {
		if p == v1.PlacementSpread {
			return la.mem < lb.mem
		}
		return la.mem > lb.mem
	}
	if la.n != lb.n {
		if p == v1.PlacementSpread {
			return la.n < lb.n
		}
		return la.n > lb.n
	}
	return a.Index < b.Index
}

// CreateInstance makes a container's slice: validated and placed first,
// recorded (state creating), then made in the kernel, attached to the
// cgroup and filtered; any failure undoes what was done.
func (m *Manager) CreateInstance(ctx context.Context, req v1.CreateRequest) (v1.Instance, error) {
	m.recon.RLock()
	defer m.recon.RUnlock()
	if m.kernel == nil {
		return v1.Instance{}, createErr(ErrUnavailable, kernel.ErrNoModule, "the cgpu kernel module is not available")
	}
	maxInst, err := m.maxInstances(ctx)
	if err != nil {
		return v1.Instance{}, createErr(ErrUnavailable, err, "the cgpu kernel module does not answer")
	}
	if err := checkRequest(&req, maxInst, m.placement); err != nil {
		return v1.Instance{}, err
	}
	cg, err := m.cgroups.Resolve(req.Cgroup)
	if err != nil {
		return v1.Instance{}, createErr(ErrInvalid, err, "cgroup %q", req.Cgroup)
	}

	e, err := m.reserve(req, cg, maxInst)
	if err != nil {
		return v1.Instance{}, err
	}
	defer e.op.Unlock()
	rec := e.rec.Clone()
	log := m.log.WithField("instance", rec.Name)

	if err := m.records.Put(ctx, rec); err != nil {
		m.mu.Lock()
		m.removeLocked(e)
		m.mu.Unlock()
		// The write may have landed: queue its removal behind it.
		m.settle("delete "+rec.Name, m.records.DeleteNoWait(rec.Name))
		return v1.Instance{}, createErr(ErrUnavailable, err, "record instance %s", rec.Name)
	}
	if err := m.apply(ctx, &rec, cg.Path); err != nil {
		if uerr := m.undoCreate(context.WithoutCancel(ctx), e, rec); uerr != nil {
			log.WithError(uerr).Error("undo of a failed create is incomplete; kept in state creating for the next start")
		}
		return v1.Instance{}, err
	}
	rec.State = state.StateReady
	m.mu.Lock()
	e.rec = rec.Clone()
	m.mu.Unlock()
	m.settle("ready "+rec.Name, m.records.PutNoWait(rec))
	if err := m.watcher.Add(rec.CgroupID, rec.Cgroup); err != nil {
		log.WithError(err).Warn("cannot watch cgroup; its removal is not noticed")
	}
	log.WithFields(map[string]any{"container": rec.ContainerID, "cgroup": rec.Cgroup, "memory": rec.Memory, "gpus": gpuList(rec)}).Info("instance created")
	return m.view(ctx, rec, false), nil
}

func gpuList(rec state.Record) []int {
	var out []int
	for _, s := range rec.Slots {
		out = append(out, s.GPU)
	}
	return out
}

// reserve checks what needs the Manager's state and enters the instance
// (state creating) with its GPUs charged; the entry is returned with its
// operation lock held.
func (m *Manager) reserve(req v1.CreateRequest, cg cgroup.Cgroup, maxInst uint32) (*entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if other := m.byCgroup[cg.ID]; other != nil {
		return nil, createErr(ErrConflict, nil, "cgroup %s already has instance %s", cg.Rel, other.rec.Name)
	}
	name := req.Name
	if name == "" {
		var err error
		if name, err = m.defaultNameLocked(req.ContainerID); err != nil {
			return nil, createErr(ErrConflict, nil, "%v", err)
		}
	} else if m.byName[name] != nil {
		return nil, createErr(ErrConflict, nil, "instance %s already exists", name)
	}
	gs, err := m.placeLocked(req, maxInst)
	if err != nil {
		return nil, err
	}
	rec := state.Record{
		Name: name, ContainerID: req.ContainerID, Cgroup: cg.Rel, CgroupID: cg.ID,
		Memory: req.Memory, Weight: req.Weight, Placement: req.Placement,
		State: state.StateCreating, Created: m.now().UTC(),
	}
	for _, g := range gs {
		rec.Slots = append(rec.Slots, state.Slot{GPU: g.Index, UUID: g.UUID, Minor: g.Minor})
	}
	e := &entry{rec: rec}
	e.op.Lock()
	m.addLocked(e)
	return e, nil
}

// kernelErr turns a kernel error into the Manager's kind.
func kernelKind(err error) error {
	switch {
	case errors.Is(err, kernel.ErrBusy):
		return ErrBusy
	case errors.Is(err, kernel.ErrNoSpace):
		return ErrNoSpace
	case errors.Is(err, kernel.ErrExists):
		return ErrConflict
	case errors.Is(err, kernel.ErrInvalid):
		return ErrInvalid
	case errors.Is(err, kernel.ErrNotFound):
		return ErrNotFound
	default:
		return ErrUnavailable
	}
}

// apply makes rec's kernel instances, attaches them and applies the
// filter, filling in the kernel ids as it goes.
func (m *Manager) apply(ctx context.Context, rec *state.Record, cgroupPath string) error {
	for i := range rec.Slots {
		s := &rec.Slots[i]
		id, err := m.kernel.Create(ctx, kernel.CreateRequest{Name: kernelName(rec.Name, s.GPU), GPU: s.Minor, MemLimit: rec.Memory, Weight: rec.Weight})
		if err != nil {
			if errors.Is(err, kernel.ErrNoSpace) {
				return createErr(ErrNoSpace, err, "GPU %d refused another instance", s.GPU)
			}
			return createErr(kernelKind(err), err, "make instance %s on GPU %d", rec.Name, s.GPU)
		}
		s.KernelID = id
		if err := m.kernel.Attach(ctx, id, rec.CgroupID); err != nil {
			kind := kernelKind(err)
			if kind == ErrNotFound { // the cgroup went meanwhile
				kind = ErrInvalid
			}
			return createErr(kind, err, "attach cgroup %s to instance %s on GPU %d", rec.Cgroup, rec.Name, s.GPU)
		}
	}
	if m.filter != nil {
		if err := m.filter.Apply(ctx, cgroupPath, rec.CgroupID, minors(*rec)); err != nil {
			return createErr(ErrUnavailable, err, "device filter of cgroup %s", rec.Cgroup)
		}
	}
	return nil
}

func minors(rec state.Record) []uint32 {
	var out []uint32
	for _, s := range rec.Slots {
		out = append(out, s.Minor)
	}
	return out
}

// undoCreate removes what a failed create made and forgets it. If the
// kernel or the filter refuses, the record stays (in state creating, on
// disk and in memory, still holding its GPUs' room) so that a destroy or
// the next start finishes the job.
func (m *Manager) undoCreate(ctx context.Context, e *entry, rec state.Record) error {
	if err := m.teardown(ctx, rec, true); err != nil {
		m.mu.Lock()
		e.rec = rec.Clone()
		m.mu.Unlock()
		return err
	}
	m.mu.Lock()
	m.removeLocked(e)
	m.mu.Unlock()
	m.settle("delete "+rec.Name, m.records.DeleteNoWait(rec.Name))
	return nil
}
