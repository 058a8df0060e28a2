//go:build cgo

package gpu

import (
	"context"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML discovers GPUs through libnvidia-ml.so.1.
type NVML struct {
	lib nvml.Interface
}

var _ Discoverer = (*NVML)(nil)

// NewNVML returns the NVML discoverer; the library is loaded at each
// Discover.
func NewNVML(opts ...Option) *NVML {
	o := newOptions(opts)
	if lib, ok := o.nvmlLib.(nvml.Interface); ok {
		return &NVML{lib: lib}
	}
	return &NVML{lib: nvml.New()}
}

// nvmlError turns a Return into an error at the boundary.
func nvmlError(what string, ret nvml.Return) error {
	return fmt.Errorf("NVML %s: %w", what, ret)
}

// Discover implements Discoverer. When the library does not load or
// initialise the error matches ErrNVMLUnavailable.
func (n *NVML) Discover(ctx context.Context) (Inventory, error) {
	if err := ctx.Err(); err != nil {
		return Inventory{}, err
	}
	if ret := n.lib.Init(); ret != nvml.SUCCESS {
		return Inventory{}, fmt.Errorf("%w: %w", ErrNVMLUnavailable, nvmlError("init", ret))
	}
	defer n.lib.Shutdown()
	inv := Inventory{Source: "nvml"}
	var ret nvml.Return
	if inv.DriverVersion, ret = n.lib.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		return Inventory{}, nvmlError("driver version", ret)
	}
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{}, nvmlError("device count", ret)
	}
	for i := range count {
		g, err := n.device(i)
		if err != nil {
			return Inventory{}, err
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	return inv, nil
}

func (n *NVML) device(i int) (GPU, error) {
	d, ret := n.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d", i), ret)
	}
	g := GPU{Index: i}
	minor, ret := d.GetMinorNumber()
	if ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d minor number", i), ret)
	}
	if minor < 0 {
		return GPU{}, fmt.Errorf("NVML device %d: minor number %d", i, minor)
	}
	g.Minor = uint32(minor)
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d UUID", i), ret)
	}
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d name", i), ret)
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d memory", i), ret)
	}
	g.MemoryTotal = mem.Total
	pci, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return GPU{}, nvmlError(fmt.Sprintf("device %d PCI info", i), ret)
	}
	g.BusID = busID(pci.BusId[:])
	return g, nil
}

// busID turns NVML's "00000000:3B:00.0" into the driver's procfs and
// sysfs form, "0000:3b:00.0".
func busID(raw []int8) string {
	b := make([]byte, 0, len(raw))
	for _, c := range raw {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	s := strings.ToLower(string(b))
	if dom, rest, ok := strings.Cut(s, ":"); ok && len(dom) == 8 {
		s = dom[4:] + ":" + rest
	}
	return s
}
