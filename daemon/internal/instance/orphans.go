package instance

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
)

// orphanResult is what fixOrphans did.
type orphanResult struct {
	adopted []state.Record // recorded, still to be repaired as any record
	// kept: the kernel instances left alone because they may be a running
	// container's slice, one "<kernel name>: <why>" each (for Health).
	kept []string
	// keepPins: unclaimed filters to leave pinned (those of live cgroups
	// while instances are kept); keepAllPins when which cannot be told.
	keepPins    map[uint64]bool
	keepAllPins bool
	errs        []error
}

// fixOrphans deals with the kernel instances named like ours that no
// record claims, as Reconcile describes. claimed holds the kernel names,
// names the instance names and cgroups the cgroup ids of the records;
// pinsKnown says that pinned lists every filter and that the cgroup mount
// can be trusted to tell a live cgroup from a gone one.
func (m *Manager) fixOrphans(ctx context.Context, kstats map[string]kernel.Stats, claimed, names map[string]bool, cgroups, pinned map[uint64]bool, pinsKnown bool) orphanResult {
	var out orphanResult
	groups := map[string][]kernel.Stats{} // by instance name
	for name, st := range kstats {
		if claimed[name] {
			continue
		}
		if !ourKernelName(name) {
			m.log.WithField("kernel_instance", name).WithField("kernel_id", st.ID).Info("reconcile: kernel instance not made by cgpud; left alone")
			continue
		}
		base := name[:strings.LastIndexByte(name, '.')]
		groups[base] = append(groups[base], st)
	}
	var bases, attached []string
	for base, sts := range groups {
		bases = append(bases, base)
		for _, st := range sts {
			if st.Cgroups > 0 {
				attached = append(attached, base)
				break
			}
		}
	}
	sort.Strings(bases)

	// The cgroups the attached ones may guard: those that had a filter
	// from cgpud, that no record claims, and that are alive.
	var live map[uint64]cgroup.Cgroup
	known := false
	if len(attached) > 0 && pinsKnown {
		var ids []uint64
		for id := range pinned {
			if !cgroups[id] {
				ids = append(ids, id)
			}
		}
		found, err := m.cgroups.Find(ids)
		if err != nil {
			out.errs = append(out.errs, errf(ErrUnavailable, err, "look for the cgroups of unclaimed kernel instances"))
		} else {
			live, known = found, true
		}
	}

	destroy := func(st kernel.Stats, msg string) {
		log := m.log.WithField("kernel_instance", st.Name).WithField("kernel_id", st.ID)
		switch err := m.kernel.Destroy(ctx, st.ID, false); {
		case err == nil, errors.Is(err, kernel.ErrNotFound):
			log.Warn("reconcile: " + msg)
		case errors.Is(err, kernel.ErrBusy):
			log.Warn("reconcile: kernel instance without a record holds memory; left until the next start")
		default:
			out.errs = append(out.errs, errf(kernelKind(err), err, "destroy kernel instance %s", st.Name))
		}
	}
	for _, base := range bases {
		sts := groups[base]
		sort.Slice(sts, func(i, j int) bool { return sts[i].Name < sts[j].Name })
		isAttached := false
		for _, a := range attached {
			isAttached = isAttached || a == base
		}
		switch {
		case !isAttached:
			for _, st := range sts {
				destroy(st, "kernel instance without a record destroyed")
			}
		case known && len(live) == 0:
			for _, st := range sts {
				destroy(st, "kernel instance without a record, attached only to cgroups that are gone, destroyed")
			}
		case known && len(live) == 1 && len(attached) == 1 && !names[base]:
			var cg cgroup.Cgroup
			for _, c := range live {
				cg = c
			}
			rec, err := m.adopt(ctx, base, sts, cg)
			if err != nil {
				out.errs = append(out.errs, err)
				out.kept = append(out.kept, keptLines(sts, "attached, and its record could not be written")...)
				continue
			}
			out.adopted = append(out.adopted, rec)
		default:
			why := "attached to a cgroup that cgpud cannot identify (cgpu.ko does not say which); kept"
			for _, st := range sts {
				m.log.WithField("kernel_instance", st.Name).WithField("kernel_id", st.ID).Error("reconcile: kernel instance without a record " + why)
			}
			out.kept = append(out.kept, keptLines(sts, why)...)
		}
	}
	if len(out.kept) > 0 {
		if known {
			out.keepPins = map[uint64]bool{}
			for id := range live {
				out.keepPins[id] = true
			}
		} else {
			out.keepAllPins = true
		}
	}
	return out
}

func keptLines(sts []kernel.Stats, why string) []string {
	var out []string
	for _, st := range sts {
		out = append(out, st.Name+": "+why)
	}
	return out
}

// adopt records the kernel instances sts, all of instance name, as an
// instance of cgroup cg: the GPUs they sit on, the smallest of their
// limits and weights (Reconcile then sets the others to it). The container
// id is not known to the kernel and stays empty.
func (m *Manager) adopt(ctx context.Context, name string, sts []kernel.Stats, cg cgroup.Cgroup) (state.Record, error) {
	rec := state.Record{
		Name: name, Cgroup: cg.Rel, CgroupID: cg.ID,
		State: state.StateReady, Created: m.now().UTC(),
	}
	for i, st := range sts {
		idx, _ := strconv.Atoi(st.Name[strings.LastIndexByte(st.Name, '.')+1:])
		slot := state.Slot{GPU: idx, Minor: st.GPU, KernelID: st.ID}
		if g, ok := m.gpuByIndex(idx); ok && g.Minor == st.GPU {
			slot.UUID = g.UUID
		}
		rec.Slots = append(rec.Slots, slot)
		if i == 0 || st.MemLimit < rec.Memory {
			rec.Memory = st.MemLimit
		}
		if i == 0 || st.Weight < rec.Weight {
			rec.Weight = st.Weight
		}
	}
	sort.Slice(rec.Slots, func(i, j int) bool { return rec.Slots[i].GPU < rec.Slots[j].GPU })
	if err := m.records.Put(ctx, rec); err != nil {
		return rec, errf(ErrUnavailable, err, "record adopted instance %s", name)
	}
	m.log.WithFields(map[string]any{"instance": name, "cgroup": cg.Rel, "memory": rec.Memory, "gpus": gpuList(rec)}).
		Warn("reconcile: kernel instance without a record, attached to a live container's cgroup, adopted")
	return rec, nil
}
