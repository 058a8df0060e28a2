package instance

import (
	"context"

	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
)

// Run destroys the instance of each container cgroup that disappears,
// whether or not a poststop hook ever comes, one log line each. It returns
// when ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	return m.watcher.Run(ctx, func(g cgroup.Gone) { m.cgroupGone(ctx, g) })
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
