package gpu

import (
	"context"
	"fmt"

	"github.com/cgpu-dev/cgpu/daemon/internal/nvrm"
)

// Procfs discovers GPUs without NVML: the driver's /proc/driver/nvidia
// files for names and UUIDs, and each GPU's memory from the driver over the
// RM ABI on an RM client of its own (FB_GET_INFO_V2), as nvmock.ko serves.
type Procfs struct {
	procRoot, devDir string
	discover         func(procRoot, devDir string) (string, []nvrm.GPU, error)
}

var _ Discoverer = (*Procfs)(nil)

// NewProcfs returns the procfs discoverer (WithProcRoot, WithDevDir).
func NewProcfs(opts ...Option) *Procfs {
	o := newOptions(opts)
	return &Procfs{procRoot: o.procRoot, devDir: o.devDir, discover: nvrm.Discover}
}

// Discover implements Discoverer. A machine without the driver gives an
// error that matches nvrm.ErrNoDriver.
func (p *Procfs) Discover(ctx context.Context) (Inventory, error) {
	if err := ctx.Err(); err != nil {
		return Inventory{}, err
	}
	version, gs, err := p.discover(p.procRoot, p.devDir)
	if err != nil {
		return Inventory{}, fmt.Errorf("discover GPUs through procfs: %w", err)
	}
	inv := Inventory{DriverVersion: version, Source: "procfs", GPUs: make([]GPU, 0, len(gs))}
	for _, g := range gs {
		if g.Minor < 0 {
			return Inventory{}, fmt.Errorf("discover GPUs through procfs: GPU %s has minor %d", g.BusID, g.Minor)
		}
		inv.GPUs = append(inv.GPUs, GPU{
			Index: g.Index, Minor: uint32(g.Minor), UUID: g.UUID, Name: g.Name,
			BusID: g.BusID, MemoryTotal: g.MemoryTotal,
		})
	}
	return inv, nil
}
