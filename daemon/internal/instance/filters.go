package instance

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"

	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// A device filter denies /dev/nvidia-uvm-tools and /dev/cgpu by numbers
// that the host hands out when their modules load (internal/devfilter's
// package comment says why they cannot be looked up when the filter runs).
// A filter built before nvidia-uvm loaded, or before a reload moved its
// major, would let a container open uvm-tools; the filter cannot know what
// the container may open, the Manager does, so the Manager applies such
// filters again: each with its instance's GPUs, or none for an instance
// Reconcile denied. Each is applied under its instance's operation lock and
// with Reconcile held off, so a refresh never races a create, destroy or
// Reconcile on the same cgroup, and the filter swaps the program of the
// pinned link in place, so the container is never without one.

// RefreshFilters applies again every device filter that was not built with
// the host's device numbers now (Stale). A filter that could not be
// brought up to date, or one no instance claims (kept by Reconcile for
// kernel instances it could not tell apart), makes Health degraded until a
// later refresh succeeds. Run calls it; it is safe at any time.
func (m *Manager) RefreshFilters(ctx context.Context) error {
	if m.filter == nil {
		return nil
	}
	err := m.refreshFilters(ctx)
	m.mu.Lock()
	m.filterErr = err
	m.mu.Unlock()
	return err
}

// RefreshFiltersSoon asks Run's loop for a refresh now (SIGHUP) rather
// than at its next tick; it does not wait.
func (m *Manager) RefreshFiltersSoon() {
	select {
	case m.filterKick <- struct{}{}:
	default:
	}
}

func (m *Manager) refreshFilters(ctx context.Context) error {
	m.recon.RLock()
	defer m.recon.RUnlock()
	ids, err := m.filter.Stale(ctx)
	if err != nil {
		return errf(ErrUnavailable, err, "check the device filters")
	}
	var errs []error
	var unclaimed []uint64
	n := 0
	for _, id := range ids {
		m.mu.Lock()
		e := m.byCgroup[id]
		m.mu.Unlock()
		if e == nil {
			unclaimed = append(unclaimed, id)
			continue
		}
		done, err := m.refreshFilter(ctx, e, id)
		if err != nil {
			errs = append(errs, err)
		}
		if done {
			n++
		}
	}
	if len(unclaimed) > 0 {
		// Listed before an instance of its own was destroyed meanwhile:
		// only the pins still there count.
		pins, err := m.filter.Pinned(ctx)
		if err != nil {
			errs = append(errs, errf(ErrUnavailable, err, "list device filters"))
		}
		for _, id := range unclaimed {
			if slices.Contains(pins, id) {
				errs = append(errs, errf(ErrUnavailable, nil, "device filter of cgroup %d: no instance claims it, so it cannot be built again with the host's device numbers", id))
			}
		}
	}
	if n > 0 {
		m.log.WithField("filters", n).Info("device filters applied again with the host's device numbers (a driver module loaded, or they were made by an earlier run)")
	}
	return errors.Join(errs...)
}

// refreshFilter applies e's filter again; done says whether it did.
func (m *Manager) refreshFilter(ctx context.Context, e *entry, id uint64) (done bool, err error) {
	e.op.Lock()
	defer e.op.Unlock()
	m.mu.Lock()
	gone, rec := e.gone, e.rec.Clone()
	m.mu.Unlock()
	// A create or destroy that could not finish is left for a destroy or
	// the next start, which decide whether it keeps a filter at all.
	if gone || rec.CgroupID != id || rec.State != state.StateReady {
		return false, nil
	}
	allow := minors(rec)
	if rec.Denied {
		allow = nil
	}
	log := m.log.WithField("instance", rec.Name).WithField("cgroup", rec.Cgroup)
	if err := m.filter.Apply(ctx, filepath.Join(m.cgroups.Root(), rec.Cgroup), id, allow); err != nil {
		// A container that just went has nothing left to guard; the
		// watcher destroys its instance.
		if alive, aerr := m.cgroups.Exists(rec.CgroupID, rec.Cgroup); aerr == nil && !alive {
			return false, nil
		}
		return false, errf(ErrUnavailable, err, "apply the device filter of instance %s again", rec.Name)
	}
	log.Debug("device filter applied again with the host's device numbers")
	return true, nil
}

// refreshLoop runs RefreshFilters at once, every m.filterEvery and when
// asked, until ctx is done.
func (m *Manager) refreshLoop(ctx context.Context) {
	if m.filter == nil {
		return
	}
	var tick <-chan time.Time
	if m.filterEvery > 0 {
		t := time.NewTicker(m.filterEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		m.mu.Lock()
		before := m.filterErr
		m.mu.Unlock()
		err := m.RefreshFilters(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && (before == nil || before.Error() != err.Error()):
			m.log.WithError(err).Error("device filters: not every filter could be brought up to date with the host's device numbers")
		case err == nil && before != nil:
			m.log.Info("device filters: every filter is up to date again")
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-m.filterKick:
		}
	}
}
