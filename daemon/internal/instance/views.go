package instance

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
	"github.com/cgpu-dev/cgpu/internal/buildinfo"
)

// view turns a record into the API's Instance; with stats it adds the
// kernel's numbers (a kernel instance that cannot be read shows zeros).
// A ready instance that Reconcile could not make whole shows as degraded.
func (m *Manager) view(ctx context.Context, rec state.Record, stats bool) v1.Instance {
	in := v1.Instance{
		Name: rec.Name, ContainerID: rec.ContainerID, Cgroup: rec.Cgroup, CgroupID: rec.CgroupID,
		Memory: rec.Memory, Weight: rec.Weight, State: rec.State, Created: rec.Created,
		GPUs: make([]v1.InstanceGPU, 0, len(rec.Slots)),
	}
	m.mu.Lock()
	if e := m.byName[rec.Name]; e != nil && e.problem != "" && rec.State == state.StateReady {
		in.State, in.Reason = v1.StateDegraded, e.problem
	}
	m.mu.Unlock()
	for _, s := range rec.Slots {
		g := v1.InstanceGPU{Index: s.GPU, UUID: s.UUID, Minor: s.Minor, KernelID: s.KernelID}
		if stats && s.KernelID != 0 && m.kernel != nil {
			if st, err := m.kernel.Stats(ctx, s.KernelID); err == nil {
				g.Used, g.Peak, g.Allocs = st.MemUsed, st.MemPeak, st.Allocs
				g.RefusedAllocs, g.RefusedManaged, g.Processes = st.RefusedAllocs, st.RefusedManaged, st.Procs
			} else {
				m.log.WithError(err).WithField("instance", rec.Name).Debug("no kernel stats")
			}
		}
		in.GPUs = append(in.GPUs, g)
	}
	return in
}

// snapshot copies the records in memory, by name.
func (m *Manager) snapshot() []state.Record {
	m.mu.Lock()
	recs := make([]state.Record, 0, len(m.byName))
	for _, e := range m.byName {
		recs = append(recs, e.rec.Clone())
	}
	m.mu.Unlock()
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	return recs
}

// ListInstances returns every instance, or those of one container.
func (m *Manager) ListInstances(ctx context.Context, containerID string) ([]v1.Instance, error) {
	out := []v1.Instance{}
	for _, rec := range m.snapshot() {
		if containerID == "" || rec.ContainerID == containerID {
			out = append(out, m.view(ctx, rec, true))
		}
	}
	return out, nil
}

// GetInstance returns one instance.
func (m *Manager) GetInstance(ctx context.Context, name string) (v1.Instance, error) {
	m.mu.Lock()
	e := m.byName[name]
	var rec state.Record
	if e != nil {
		rec = e.rec.Clone()
	}
	m.mu.Unlock()
	if e == nil {
		return v1.Instance{}, errf(ErrNotFound, nil, "instance %q not found", name)
	}
	return m.view(ctx, rec, true), nil
}

// GPUs returns the node's GPUs with what is allocated and used on each.
func (m *Manager) GPUs(ctx context.Context) ([]v1.GPU, error) {
	maxInst := 0
	if n, err := m.maxInstances(ctx); err == nil {
		maxInst = int(n)
	}
	used := m.usedByGPU(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]v1.GPU, 0, len(m.inv.GPUs))
	for _, g := range m.inv.GPUs {
		l := m.loadOf(g.Index)
		out = append(out, v1.GPU{
			Index: g.Index, Minor: g.Minor, UUID: g.UUID, Name: g.Name, BusID: g.BusID,
			MemoryTotal: g.MemoryTotal, MemoryAllocated: l.mem, MemoryUsed: used[g.Index],
			Instances: l.n, MaxInstances: maxInst,
		})
	}
	return out, nil
}

// usedByGPU sums the kernel's used memory of the instances, per GPU.
func (m *Manager) usedByGPU(ctx context.Context) map[int]uint64 {
	used := map[int]uint64{}
	if m.kernel == nil {
		return used
	}
	for _, rec := range m.snapshot() {
		for _, s := range rec.Slots {
			if s.KernelID == 0 {
				continue
			}
			if st, err := m.kernel.Stats(ctx, s.KernelID); err == nil {
				used[s.GPU] += st.MemUsed
			}
		}
	}
	return used
}

// Inspect returns the data of the inspect table.
func (m *Manager) Inspect(ctx context.Context) (v1.Inspect, error) {
	gpus, err := m.GPUs(ctx)
	if err != nil {
		return v1.Inspect{}, err
	}
	ins, err := m.ListInstances(ctx, "")
	if err != nil {
		return v1.Inspect{}, err
	}
	out := v1.Inspect{Node: m.node, Address: m.address, GPUs: make([]v1.InspectGPU, 0, len(gpus)), Instances: ins}
	for _, g := range gpus {
		out.GPUs = append(out.GPUs, v1.InspectGPU{Index: g.Index, Allocated: g.MemoryAllocated, Total: g.MemoryTotal, Used: g.MemoryUsed})
	}
	return out, nil
}

// Version returns the daemon's, the module's and the driver's versions;
// Module is nil when the kernel does not answer.
func (m *Manager) Version(ctx context.Context) (v1.Version, error) {
	m.mu.Lock()
	inv := m.inv
	m.mu.Unlock()
	out := v1.Version{
		Daemon: buildinfo.Version, API: v1.APIVersion,
		Driver: v1.Driver{Version: inv.DriverVersion, Source: inv.Source},
	}
	if m.kernel == nil {
		return out, nil
	}
	kv, err := m.kernel.Version(ctx)
	if err != nil {
		return out, nil
	}
	mod := &v1.Module{ABIMajor: kv.ABIMajor, ABIMinor: kv.ABIMinor, MaxInst: kv.MaxInst}
	if b, err := os.ReadFile(m.modVersionFile); err == nil {
		mod.Version = strings.TrimSpace(string(b))
	}
	out.Module = mod
	return out, nil
}

// Health checks the kernel, the GPUs, the state store, the last
// reconciliation, the instances (none degraded, no kernel instance kept
// without a record) and, with a device filter, that the last refresh
// brought every filter up to date with the host's device numbers.
func (m *Manager) Health(ctx context.Context) v1.Health {
	var checks []v1.Check
	add := func(name string, err error, okMsg string) {
		c := v1.Check{Name: name, OK: err == nil, Message: okMsg}
		if err != nil {
			c.Message = err.Error()
		}
		checks = append(checks, c)
	}
	if m.kernel == nil {
		add("kernel", kernel.ErrNoModule, "")
	} else {
		_, err := m.kernel.Version(ctx)
		add("kernel", err, "")
	}
	m.mu.Lock()
	ngpu, lastRec, reconciled, filterErr := len(m.inv.GPUs), m.lastRec, m.reconciled, m.filterErr
	var degraded []string
	for name, e := range m.byName {
		if e.problem != "" {
			degraded = append(degraded, "instance "+name+" is degraded: "+e.problem)
		}
	}
	sort.Strings(degraded)
	for _, o := range m.orphans {
		degraded = append(degraded, "kernel instance "+o)
	}
	m.mu.Unlock()
	if ngpu == 0 {
		add("gpus", errf(ErrUnavailable, nil, "no GPU found"), "")
	} else {
		add("gpus", nil, "")
	}
	_, err := m.records.List(ctx)
	add("state", err, "")
	if !reconciled && lastRec == nil {
		lastRec = errf(ErrUnavailable, nil, "not reconciled yet")
	}
	add("reconcile", lastRec, "")
	if len(degraded) > 0 {
		add("instances", errors.New(strings.Join(degraded, "; ")), "")
	} else {
		add("instances", nil, "")
	}
	if m.filter != nil {
		add("filters", filterErr, "")
	}
	h := v1.Health{Status: "ok", Checks: checks}
	for _, c := range checks {
		if !c.OK {
			h.Status = "degraded"
		}
	}
	return h
}
