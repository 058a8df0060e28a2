package instance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// Reconcile brings the records, the kernel's instances and the device
// filters into step, one log line per fix, and loads the records. It runs
// at start, before serving; operations wait while it runs.
//
//   - A create that was interrupted is finished when everything it makes
//     exists (its kernel instances attached, its filter pinned, its cgroup
//     alive): its caller may have had its answer. Otherwise it is rolled
//     back: its caller cannot have had one.
//   - An interrupted destroy is finished as it was asked (with or without
//     force; a refused one leaves the instance whole).
//   - A ready instance whose cgroup is gone is destroyed.
//   - A ready instance whose kernel instance is gone (the module was
//     reloaded) is made again while its cgroup lives: the container asked
//     for a slice and must not run without one. If it cannot be made again,
//     or the cgroup cannot be attached to it, the instance is kept and
//     degraded, and its cgroup's device filter is replaced by one that
//     denies every GPU (the record says so, Denied, before the filter is
//     changed) until a later Reconcile repairs it and puts the instance's
//     own filter back. The filter acts when a device is opened: a process
//     that already holds a GPU open keeps it.
//   - A kernel limit or weight that differs from the record (a resize
//     interrupted before its record, a write to /proc/cgpu_km) is set back
//     to the record's; the record never follows the kernel. If the kernel
//     refuses (more memory in use than the record allows), the instance is
//     kept as it is and degraded.
//   - Kernel instances named like ours that no record claims and that no
//     cgroup is attached to are destroyed, without force: one that holds
//     memory is left, with a warning, for the next start (forcing would
//     free a quota under a running process). Others' names are left alone.
//   - Unclaimed ones that are attached (the state directory was lost) may
//     be the slice of a running container. cgpu.ko does not say which
//     cgroups an instance is attached to; the device filters pinned for
//     cgroups that no record claims (bpffs outlives the state directory)
//     say which containers had slices. If none of those cgroups is alive,
//     the instances are destroyed as above. If one is, and the unclaimed
//     attached kernel instances are those of one instance name, they are
//     adopted: a record is made from the kernel's view (name, GPUs, the
//     smallest limit and weight) and that cgroup. Otherwise they cannot be
//     told apart: they are kept, and so are the filters of those cgroups,
//     and Health is degraded until a later Reconcile can decide.
//   - Filters pinned for cgroups that no record claims are removed (but
//     those kept above), and missing ones of live instances applied.
func (m *Manager) Reconcile(ctx context.Context) error {
	m.recon.Lock()
	defer m.recon.Unlock()
	err := m.reconcile(ctx)
	m.mu.Lock()
	m.lastRec, m.reconciled = err, true
	m.mu.Unlock()
	return err
}

func (m *Manager) reconcile(ctx context.Context) error {
	var errs []error
	if m.disc != nil {
		inv, err := m.disc.Discover(ctx)
		if err != nil {
			errs = append(errs, errf(ErrUnavailable, err, "discover GPUs"))
		} else {
			m.mu.Lock()
			m.inv = inv
			m.mu.Unlock()
		}
	}
	if err := m.records.Sync(ctx); err != nil {
		return errf(ErrUnavailable, err, "state store")
	}
	recs, err := m.records.List(ctx)
	if err != nil {
		return errf(ErrUnavailable, err, "read state")
	}
	if m.kernel == nil {
		m.loadRecords(recs, nil, nil)
		return errors.Join(append(errs, errf(ErrUnavailable, kernel.ErrNoModule, "reconcile"))...)
	}
	v, err := m.kernel.Version(ctx)
	if err != nil {
		m.loadRecords(recs, nil, nil)
		return errors.Join(append(errs, errf(ErrUnavailable, err, "kernel version"))...)
	}
	m.mu.Lock()
	m.maxInst = v.MaxInst
	m.mu.Unlock()

	kstats, err := m.kernelByName(ctx)
	if err != nil {
		m.loadRecords(recs, nil, nil)
		return errors.Join(append(errs, errf(ErrUnavailable, err, "list kernel instances"))...)
	}
	pinned := map[uint64]bool{}
	pinsKnown := m.filter != nil
	if m.filter != nil {
		ids, err := m.filter.Pinned(ctx)
		if err != nil {
			errs = append(errs, errf(ErrUnavailable, err, "list device filters"))
			pinsKnown = false
		}
		for _, id := range ids {
			pinned[id] = true
		}
	}

	// Without a sound cgroup2 mount no cgroup can be judged gone: keep the
	// instances rather than destroy them all on a misconfiguration.
	rootErr := m.cgroups.CheckRoot()
	if rootErr != nil {
		errs = append(errs, errf(ErrUnavailable, rootErr, "cgroup mount"))
		m.log.WithError(rootErr).Error("reconcile: cgroup mount unusable; no instance is destroyed for a missing cgroup")
	}
	var kept []state.Record
	problems := map[string]string{}
	fix := func(rec state.Record) {
		log := m.log.WithField("instance", rec.Name).WithField("cgroup", rec.Cgroup)
		out, keep, problem, err := m.fixRecord(ctx, log, rec, kstats, pinned, rootErr == nil)
		if err != nil {
			errs = append(errs, err)
		}
		if keep {
			kept = append(kept, out)
			if problem != "" {
				problems[out.Name] = problem
			}
		}
	}
	for _, rec := range recs {
		fix(rec)
	}

	claimed := map[string]bool{}
	cgroups := map[uint64]bool{}
	names := map[string]bool{}
	claim := func(rec state.Record) {
		names[rec.Name] = true
		cgroups[rec.CgroupID] = true
		for _, s := range rec.Slots {
			claimed[kernelName(rec.Name, s.GPU)] = true
		}
	}
	for _, rec := range kept {
		claim(rec)
	}
	// Kernel instances may have changed above: look again. Without the
	// list, a filter without a record may be an unclaimed instance's: keep
	// them all.
	var o orphanResult
	if kstats, err = m.kernelByName(ctx); err != nil {
		errs = append(errs, errf(ErrUnavailable, err, "list kernel instances"))
		o.keepAllPins = true
	} else {
		o = m.fixOrphans(ctx, kstats, claimed, names, cgroups, pinned, pinsKnown && rootErr == nil)
	}
	errs = append(errs, o.errs...)
	for _, rec := range o.adopted {
		fix(rec)
		claim(rec)
	}
	if m.filter != nil && !o.keepAllPins {
		if ids, err := m.filter.Pinned(ctx); err == nil {
			for _, id := range ids {
				if cgroups[id] || o.keepPins[id] {
					continue
				}
				if err := m.filter.Remove(ctx, id); err != nil {
					errs = append(errs, errf(ErrUnavailable, err, "remove device filter of cgroup %d", id))
					continue
				}
				m.log.WithField("cgroup_id", id).Warn("reconcile: device filter without an instance removed")
			}
		}
	}
	m.loadRecords(kept, problems, o.kept)
	return errors.Join(errs...)
}

// fixRecord repairs one record; keep says whether it stays, problem why
// it is degraded (empty when it is whole).
func (m *Manager) fixRecord(ctx context.Context, log logrus.FieldLogger, rec state.Record, kstats map[string]kernel.Stats, pinned map[uint64]bool, rootOK bool) (out state.Record, keep bool, problem string, err error) {
	remove := func(force bool, msg string) (state.Record, bool, string, error) {
		if err := m.teardown(ctx, rec, force); err != nil {
			if errors.Is(err, ErrBusy) && !errors.Is(err, errNotRestored) {
				rec.State, rec.Force = state.StateReady, false
				if perr := m.records.Put(ctx, rec); perr != nil {
					return rec, true, "", errf(ErrUnavailable, perr, "record instance %s", rec.Name)
				}
				log.Warn("reconcile: interrupted destroy refused, the instance holds memory; kept")
				return m.fillIDs(ctx, rec), true, "", nil
			}
			return rec, true, "", err
		}
		if err := m.records.Delete(ctx, rec.Name); err != nil {
			return rec, true, "", errf(ErrUnavailable, err, "delete record %s", rec.Name)
		}
		log.Warn("reconcile: " + msg)
		return rec, false, "", nil
	}
	alive, err := m.cgroups.Exists(rec.CgroupID, rec.Cgroup)
	if err != nil || !rootOK {
		alive = true // unsure: keep the slice
	}
	switch rec.State {
	case state.StateDestroying:
		return remove(rec.Force, "interrupted destroy finished")
	case state.StateCreating:
		complete := alive && (m.filter == nil || pinned[rec.CgroupID])
		for _, s := range rec.Slots {
			st, ok := kstats[kernelName(rec.Name, s.GPU)]
			complete = complete && ok && st.Cgroups > 0
		}
		if !complete {
			return remove(true, "interrupted create rolled back")
		}
		rec = m.fillIDs(ctx, rec)
		rec.State = state.StateReady
		if err := m.records.Put(ctx, rec); err != nil {
			return rec, true, "", errf(ErrUnavailable, err, "record instance %s", rec.Name)
		}
		log.Info("reconcile: interrupted create finished")
		return rec, true, "", nil
	}
	if !alive {
		return remove(true, "cgroup gone; instance destroyed")
	}
	cgPath := filepath.Join(m.cgroups.Root(), rec.Cgroup)
	changed := false
	// unlimited: a GPU of the instance on which the container has no
	// attached kernel instance, so nothing limits it there.
	unlimited := false
	var problems []string
	degrade := func(gpuIndex int, err error, format string, args ...any) {
		msg := fmt.Sprintf("GPU %d: ", gpuIndex) + fmt.Sprintf(format, args...)
		log.WithError(err).WithField("gpu", gpuIndex).Error("reconcile: " + msg)
		problems = append(problems, msg+": "+err.Error())
	}
	for i := range rec.Slots {
		s := &rec.Slots[i]
		st, ok := kstats[kernelName(rec.Name, s.GPU)]
		if !ok {
			// The recorded id is stale: the kernel has no instance by the
			// name, and ids are reused after a reload.
			s.KernelID, changed = 0, true
			if err := m.remakeSlot(ctx, &rec, i); err != nil {
				unlimited = true
				degrade(s.GPU, err, "kernel instance gone and cannot be made again")
				continue
			}
			log.WithField("gpu", s.GPU).Warn("reconcile: kernel instance gone (module reloaded?); made again")
			continue
		}
		if s.KernelID != st.ID {
			s.KernelID, changed = st.ID, true
		}
		if st.Cgroups == 0 {
			if err := m.kernel.Attach(ctx, st.ID, rec.CgroupID); err != nil && !errors.Is(err, kernel.ErrExists) {
				unlimited = true
				degrade(s.GPU, err, "the cgroup was not attached and cannot be attached again")
			} else {
				log.WithField("gpu", s.GPU).Warn("reconcile: cgroup was not attached; attached")
			}
		}
		// The record wins: a limit raised behind the daemon's back (a write
		// to /proc/cgpu_km) is not adopted.
		if st.MemLimit != rec.Memory {
			if err := m.kernel.SetLimit(ctx, st.ID, rec.Memory); err != nil {
				degrade(s.GPU, err, "kernel limit %s (%s in use) differs from the instance's %s and cannot be set back", human(st.MemLimit), human(st.MemUsed), human(rec.Memory))
			} else {
				log.WithField("gpu", s.GPU).Warn("reconcile: kernel limit set back to the record's")
			}
		}
		if st.Weight != rec.Weight {
			if err := m.kernel.SetWeight(ctx, st.ID, rec.Weight); err != nil {
				degrade(s.GPU, err, "kernel weight %d differs from the instance's %d and cannot be set back", st.Weight, rec.Weight)
			} else {
				log.WithField("gpu", s.GPU).Warn("reconcile: kernel weight set back to the record's")
			}
		}
	}
	var ferr error
	switch {
	case unlimited && m.filter == nil:
		problems = append(problems, "no device filter to deny the container its GPUs")
	case unlimited:
		// Fail closed: the container may not open a GPU it has no limit on,
		// and without knowing which it may open, it may open none. The
		// record says so first, so that a crash cannot leave a filter that
		// denies everything behind a record that does not know it.
		if !rec.Denied {
			rec.Denied = true
			if err := m.records.Put(ctx, rec); err != nil {
				ferr = errf(ErrUnavailable, err, "record instance %s", rec.Name)
			} else {
				changed = false
			}
		}
		if err := m.filter.Apply(ctx, cgPath, rec.CgroupID, nil); err != nil {
			problems = append(problems, "its GPUs cannot be denied: "+err.Error())
			ferr = errors.Join(ferr, errf(ErrUnavailable, err, "device filter of instance %s", rec.Name))
		} else {
			problems = append(problems, "every GPU denied to the container until it is repaired")
			log.Error("reconcile: the container's limit cannot be made whole; every GPU denied to it")
		}
	case m.filter != nil && (rec.Denied || !pinned[rec.CgroupID]):
		if err := m.filter.Apply(ctx, cgPath, rec.CgroupID, minors(rec)); err != nil {
			return rec, true, strings.Join(problems, "; "), errf(ErrUnavailable, err, "device filter of instance %s", rec.Name)
		}
		if rec.Denied {
			rec.Denied, changed = false, true
			log.Warn("reconcile: instance repaired; its GPUs allowed again")
		} else {
			log.Warn("reconcile: device filter missing; applied")
		}
	}
	if changed {
		if err := m.records.Put(ctx, rec); err != nil {
			ferr = errors.Join(ferr, errf(ErrUnavailable, err, "record instance %s", rec.Name))
		}
	}
	return rec, true, strings.Join(problems, "; "), ferr
}

// fillIDs sets the kernel ids of rec's slots from the kernel's names.
func (m *Manager) fillIDs(ctx context.Context, rec state.Record) state.Record {
	for i := range rec.Slots {
		if id, err := m.slotID(ctx, rec, i); err == nil {
			rec.Slots[i].KernelID = id
		}
	}
	return rec
}

// loadRecords replaces the instances in memory with recs (problems says
// which are degraded, by name) and watches their cgroups; orphans are the
// kernel instances kept unclaimed.
func (m *Manager) loadRecords(recs []state.Record, problems map[string]string, orphans []string) {
	m.mu.Lock()
	old := m.byCgroup
	m.byName = map[string]*entry{}
	m.byCgroup = map[uint64]*entry{}
	m.load = map[int]*gpuLoad{}
	for _, rec := range recs {
		m.addLocked(&entry{rec: rec.Clone(), problem: problems[rec.Name]})
	}
	m.orphans = orphans
	m.mu.Unlock()
	for id := range old {
		m.watcher.Remove(id)
	}
	for _, rec := range recs {
		if err := m.watcher.Add(rec.CgroupID, rec.Cgroup); err != nil {
			m.log.WithError(err).WithField("instance", rec.Name).Warn("cannot watch cgroup")
		}
	}
}
