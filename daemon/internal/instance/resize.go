package instance

import (
	"context"
	"errors"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// ResizeInstance changes an instance's memory and/or weight on all its
// GPUs: checked against the GPUs' room first, then set in the kernel (a
// limit below the memory in use is ErrBusy, and nothing changes), then
// recorded. A crash before the record leaves the old values on disk, and
// the next start sets the kernel back to them: the caller had no answer.
func (m *Manager) ResizeInstance(ctx context.Context, name string, req v1.ResizeRequest) (v1.Instance, error) {
	m.recon.RLock()
	defer m.recon.RUnlock()
	if req.Memory == nil && req.Weight == nil {
		return v1.Instance{}, errf(ErrInvalid, nil, "resize of %s: give memory, weight or both", name)
	}
	if m.kernel == nil {
		return v1.Instance{}, errf(ErrUnavailable, kernel.ErrNoModule, "resize instance %s", name)
	}
	maxInst, err := m.maxInstances(ctx)
	if err != nil {
		return v1.Instance{}, err
	}
	if req.Memory != nil {
		if err := v1.ValidMemory(*req.Memory); err != nil {
			return v1.Instance{}, errf(ErrInvalid, nil, "resize of %s: %v", name, err)
		}
	}
	if req.Weight != nil && (*req.Weight == 0 || *req.Weight > maxInst) {
		return v1.Instance{}, errf(ErrInvalid, nil, "resize of %s: weight %d is outside 1..%d", name, *req.Weight, maxInst)
	}
	e, err := m.lookup(name)
	if err != nil {
		return v1.Instance{}, err
	}
	defer e.op.Unlock()

	m.mu.Lock()
	old := e.rec.Clone()
	if old.State != state.StateReady {
		m.mu.Unlock()
		return v1.Instance{}, errf(ErrConflict, nil, "instance %s is %s", name, old.State)
	}
	if e.problem != "" {
		// Its kernel instances are not what the record says; the retry
		// (or a destroy) comes first.
		m.mu.Unlock()
		return v1.Instance{}, errf(ErrConflict, nil, "instance %s is degraded (%s); it cannot be resized until it is repaired", name, e.problem)
	}
	nw := old.Clone()
	if req.Memory != nil {
		nw.Memory = *req.Memory
	}
	if req.Weight != nil {
		nw.Weight = *req.Weight
	}
	// Charge the growth now, so that concurrent creates see it.
	var refused error
	for _, s := range old.Slots {
		g, ok := m.gpuByIndex(s.GPU)
		l := m.loadOf(s.GPU)
		switch {
		case ok && nw.Memory > g.MemoryTotal:
			refused = errf(ErrInvalid, nil, "resize of %s: GPU %d has %s in all", name, s.GPU, human(g.MemoryTotal))
		case ok && nw.Memory > old.Memory && l.mem-old.Memory+nw.Memory > g.MemoryTotal:
			refused = errf(ErrNoSpace, nil, "resize of %s: GPU %d has %s unallocated, less than the %s more asked", name, s.GPU, human(g.MemoryTotal-min(l.mem, g.MemoryTotal)), human(nw.Memory-old.Memory))
		case l.weight-old.Weight+nw.Weight > maxInst:
			refused = errf(ErrNoSpace, nil, "resize of %s: GPU %d's weights would sum to %d, above %d", name, s.GPU, l.weight-old.Weight+nw.Weight, maxInst)
		}
		if refused != nil {
			m.mu.Unlock()
			return v1.Instance{}, refused
		}
	}
	m.recharge(old, nw, true)
	m.mu.Unlock()

	if err := m.setSlots(ctx, old, nw); err != nil {
		m.mu.Lock()
		m.recharge(nw, old, false)
		m.mu.Unlock()
		return v1.Instance{}, err
	}
	if err := m.records.Put(ctx, nw); err != nil {
		// The kernel has the new values; the record, maybe not. Keep them
		// in memory (the truth now); the next start sets the kernel to
		// whatever the disk says.
		m.mu.Lock()
		m.recharge(old, nw, false)
		e.rec = nw.Clone()
		m.mu.Unlock()
		return v1.Instance{}, errf(ErrUnavailable, err, "record the resize of %s", name)
	}
	m.mu.Lock()
	m.recharge(old, nw, false)
	e.rec = nw.Clone()
	m.mu.Unlock()
	m.log.WithField("instance", name).WithField("memory", nw.Memory).WithField("weight", nw.Weight).Info("instance resized")
	return m.view(ctx, nw, true), nil
}

// recharge moves the GPUs' accounting from from's values to to's: only
// the growth when grow, only the shrink otherwise; m.mu held.
func (m *Manager) recharge(from, to state.Record, grow bool) {
	for _, s := range from.Slots {
		l := m.loadOf(s.GPU)
		if (to.Memory > from.Memory) == grow && to.Memory != from.Memory {
			l.mem = l.mem - from.Memory + to.Memory
		}
		if (to.Weight > from.Weight) == grow && to.Weight != from.Weight {
			l.weight = l.weight - from.Weight + to.Weight
		}
	}
}

// setSlots sets every kernel instance of old to nw's limit and weight;
// on failure those already changed are set back.
func (m *Manager) setSlots(ctx context.Context, old, nw state.Record) error {
	type change struct {
		id    uint64
		limit bool
	}
	var done []change
	undo := func() {
		uctx := context.WithoutCancel(ctx)
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			var err error
			if c.limit {
				err = m.kernel.SetLimit(uctx, c.id, old.Memory)
			} else {
				err = m.kernel.SetWeight(uctx, c.id, old.Weight)
			}
			if err != nil {
				m.log.WithError(err).WithField("instance", old.Name).Warn("cannot set back a partial resize; the next start does")
			}
		}
	}
	for _, s := range old.Slots {
		if nw.Memory != old.Memory {
			if err := m.kernel.SetLimit(ctx, s.KernelID, nw.Memory); err != nil {
				undo()
				return resizeErr(nw.Name, s.GPU, err)
			}
			done = append(done, change{s.KernelID, true})
		}
		if nw.Weight != old.Weight {
			if err := m.kernel.SetWeight(ctx, s.KernelID, nw.Weight); err != nil {
				undo()
				return resizeErr(nw.Name, s.GPU, err)
			}
			done = append(done, change{s.KernelID, false})
		}
	}
	return nil
}

func resizeErr(name string, gpuIndex int, err error) error {
	if errors.Is(err, kernel.ErrBusy) {
		return errf(ErrBusy, err, "resize of %s: GPU %d holds more than the new limit", name, gpuIndex)
	}
	return errf(kernelKind(err), err, "resize of %s on GPU %d", name, gpuIndex)
}
