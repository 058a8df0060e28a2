package instance

import (
	"context"
	"sync"
	"time"

	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
)

// Run destroys the instance of each container cgroup that disappears,
// whether or not a poststop hook ever comes, one log line each, reconciles
// again every retry interval while something is degraded, and keeps the
// device filters up to date with the host's device numbers
// (RefreshFilters, at once and every filter refresh interval). It returns
// when ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Add(2)
	go func() {
		defer wg.Done()
		m.retryDegraded(rctx)
	}()
	go func() {
		defer wg.Done()
		m.refreshLoop(rctx)
	}()
	return m.watcher.Run(ctx, func(g cgroup.Gone) { m.cgroupGone(ctx, g) })
}

// retryDegraded reconciles again, every m.retry until ctx is done, while
// an instance is degraded or kernel instances are kept without a record:
// what could not be repaired at start (the module was reloaded without a
// GPU, a limit in use above the record's) may be repairable now.
func (m *Manager) retryDegraded(ctx context.Context) {
	if m.retry <= 0 {
		return
	}
	t := time.NewTicker(m.retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !m.degraded() {
			continue
		}
		if err := m.Reconcile(ctx); err != nil && ctx.Err() == nil {
			m.log.WithError(err).Error("reconcile (retry of degraded instances) failed")
		}
		if !m.degraded() {
			m.log.Info("reconcile: nothing is degraded any more")
		}
	}
}

// degraded says whether an instance is degraded or kernel instances are
// kept without a record.
func (m *Manager) degraded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.orphans) > 0 {
		return true
	}
	for _, e := range m.byName {
		if e.problem != "" {
			return true
		}
	}
	return false
}

func (m *Manager) cgroupGone(ctx context.Context, g cgroup.Gone) {
	m.recon.RLock()
	defer m.recon.RUnlock()
	m.mu.Lock()
	e := m.byCgroup[g.ID]
	m.mu.Unlock()
	if e == nil {
		return
	}
	e.op.Lock()
	defer e.op.Unlock()
	m.mu.Lock()
	gone, rec := e.gone, e.rec.Clone()
	m.mu.Unlock()
	if gone || rec.CgroupID != g.ID {
		return
	}
	log := m.log.WithField("instance", rec.Name).WithField("cgroup", rec.Cgroup).WithField("noticed_by", g.By)
	if m.kernel == nil {
		log.Error("cgroup gone but the kernel module is not available; the next start destroys the instance")
		return
	}
	// The container is gone: nothing is left to protect, so force.
	if err := m.destroy(ctx, e, true); err != nil {
		log.WithError(err).Error("cgroup gone but its instance could not be destroyed; retried at the next sweep")
		if werr := m.watcher.Add(rec.CgroupID, rec.Cgroup); werr != nil {
			log.WithError(werr).Warn("cannot watch cgroup again")
		}
		return
	}
	log.Info("cgroup gone; instance destroyed")
}

// Close releases the cgroup watcher (Run does too when it returns). The
// store and the kernel client belong to the caller.
func (m *Manager) Close() error { return m.watcher.Close() }
