package instance

import (
	"context"
	"errors"

	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// DestroyInstance ends an instance: recorded as destroying, its kernel
// instances destroyed (which detaches its cgroup), its filter removed, its
// record deleted. Without force an instance whose processes hold memory is
// refused with ErrBusy and left as it was.
func (m *Manager) DestroyInstance(ctx context.Context, name string, force bool) error {
	m.recon.RLock()
	defer m.recon.RUnlock()
	if m.kernel == nil {
		return errf(ErrUnavailable, kernel.ErrNoModule, "destroy instance %s", name)
	}
	e, err := m.lookup(name)
	if err != nil {
		return err
	}
	defer e.op.Unlock()
	return m.destroy(ctx, e, force)
}

// destroy does DestroyInstance's work; e.op held.
func (m *Manager) destroy(ctx context.Context, e *entry, force bool) error {
	m.mu.Lock()
	rec := e.rec.Clone()
	m.mu.Unlock()
	if !force {
		// The kernel would refuse too, but only slot by slot; asking first
		// keeps a multi-GPU instance whole in the common case.
		for i, s := range rec.Slots {
			id, err := m.slotID(ctx, rec, i)
			if err != nil {
				return errf(ErrUnavailable, err, "destroy instance %s", rec.Name)
			}
			if id == 0 {
				continue
			}
			if st, err := m.kernel.Stats(ctx, id); err == nil && st.MemUsed > 0 {
				return errf(ErrBusy, nil, "instance %s holds %s on GPU %d in %d processes; destroy it with force to end it anyway", rec.Name, human(st.MemUsed), s.GPU, st.Procs)
			}
		}
	}
	prev := rec.State
	rec.State, rec.Force = state.StateDestroying, force
	if err := m.records.Put(ctx, rec); err != nil {
		return errf(ErrUnavailable, err, "record the destroy of instance %s", rec.Name)
	}
	m.setRec(e, rec)
	// Recorded: from here on the destroy is finished even if the caller
	// hangs up, rather than left half done until the next start.
	ctx = context.WithoutCancel(ctx)
	if err := m.destroySlots(ctx, &rec, force); err != nil {
		if errors.Is(err, ErrBusy) && !errors.Is(err, errNotRestored) {
			rec.State, rec.Force = prev, false
			m.setRec(e, rec)
			m.settle("restore "+rec.Name, m.records.PutNoWait(rec))
		}
		return err
	}
	if m.filter != nil {
		if err := m.filter.Remove(ctx, rec.CgroupID); err != nil {
			m.setRec(e, rec)
			return errf(ErrUnavailable, err, "remove the device filter of instance %s", rec.Name)
		}
	}
	// Waited for, though the next start would finish a destroy whose
	// delete was lost: a create queued behind an unfinished delete would
	// wait for two commits instead of one.
	derr := m.records.Delete(ctx, rec.Name)
	m.mu.Lock()
	m.removeLocked(e)
	m.mu.Unlock()
	m.watcher.Remove(rec.CgroupID)
	if derr != nil {
		m.log.WithError(derr).WithField("instance", rec.Name).Warn("record of a destroyed instance not deleted; the next start does")
	}
	m.log.WithField("instance", rec.Name).WithField("force", force).Info("instance destroyed")
	return nil
}

func (m *Manager) setRec(e *entry, rec state.Record) {
	m.mu.Lock()
	e.rec = rec.Clone()
	m.mu.Unlock()
}

// errNotRestored marks a refused destroy that could not put back the
// kernel instances it had already destroyed.
var errNotRestored = errors.New("instance left partly destroyed")

// destroySlots destroys rec's kernel instances, zeroing their ids. A
// kernel instance already gone is fine. If one refuses (busy, without
// force), those destroyed before it are made again so the instance stays
// whole, and ErrBusy is returned.
func (m *Manager) destroySlots(ctx context.Context, rec *state.Record, force bool) error {
	var done []int
	for i := range rec.Slots {
		id, err := m.slotID(ctx, *rec, i)
		if err != nil {
			return errf(ErrUnavailable, err, "destroy instance %s", rec.Name)
		}
		if id != 0 {
			err = m.kernel.Destroy(ctx, id, force)
		}
		switch {
		case err == nil, errors.Is(err, kernel.ErrNotFound):
			rec.Slots[i].KernelID = 0
			done = append(done, i)
		case errors.Is(err, kernel.ErrBusy):
			busy := errf(ErrBusy, err, "instance %s holds memory on GPU %d; destroy it with force to end it anyway", rec.Name, rec.Slots[i].GPU)
			for _, j := range done {
				if rerr := m.remakeSlot(ctx, rec, j); rerr != nil {
					return errors.Join(busy, errNotRestored, rerr)
				}
			}
			return busy
		default:
			return errf(kernelKind(err), err, "destroy instance %s on GPU %d", rec.Name, rec.Slots[i].GPU)
		}
	}
	return nil
}

// remakeSlot makes slot i's kernel instance again and attaches it.
func (m *Manager) remakeSlot(ctx context.Context, rec *state.Record, i int) error {
	s := &rec.Slots[i]
	id, err := m.kernel.Create(ctx, kernel.CreateRequest{Name: kernelName(rec.Name, s.GPU), GPU: s.Minor, MemLimit: rec.Memory, Weight: rec.Weight})
	if err != nil {
		return err
	}
	s.KernelID = id
	return m.kernel.Attach(ctx, id, rec.CgroupID)
}

// slotID finds the kernel instance of rec's slot i: by its recorded id
// when that instance still bears the slot's name (ids are reused after the
// module is reloaded), else by name. 0 means there is none.
func (m *Manager) slotID(ctx context.Context, rec state.Record, i int) (uint64, error) {
	want := kernelName(rec.Name, rec.Slots[i].GPU)
	if id := rec.Slots[i].KernelID; id != 0 {
		st, err := m.kernel.Stats(ctx, id)
		if err == nil && st.Name == want {
			return id, nil
		}
		if err != nil && !errors.Is(err, kernel.ErrNotFound) {
			return 0, err
		}
	}
	byName, err := m.kernelByName(ctx)
	if err != nil {
		return 0, err
	}
	return byName[want].ID, nil
}

// kernelByName lists the kernel's instances by name.
func (m *Manager) kernelByName(ctx context.Context) (map[string]kernel.Stats, error) {
	ids, err := m.kernel.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]kernel.Stats, len(ids))
	for _, id := range ids {
		st, err := m.kernel.Stats(ctx, id)
		if errors.Is(err, kernel.ErrNotFound) {
			continue // destroyed since the list
		}
		if err != nil {
			return nil, err
		}
		out[st.Name] = st
	}
	return out, nil
}

// teardown removes everything of rec from the kernel and the filter.
func (m *Manager) teardown(ctx context.Context, rec state.Record, force bool) error {
	if err := m.destroySlots(ctx, &rec, force); err != nil {
		return err
	}
	if m.filter != nil {
		if err := m.filter.Remove(ctx, rec.CgroupID); err != nil {
			return errf(ErrUnavailable, err, "remove the device filter of instance %s", rec.Name)
		}
	}
	return nil
}
