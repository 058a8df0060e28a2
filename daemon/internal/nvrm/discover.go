package nvrm

import (
	"fmt"
)

// GPU is one GPU with everything the daemon needs to place slices on it.
type GPU struct {
	Index       int    `json:"index"`
	Minor       int    `json:"minor"`
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	BusID       string `json:"bus_id"`
	MemoryTotal uint64 `json:"memory_total"`
	MemoryFree  uint64 `json:"memory_free"`
}

// Discover finds the GPUs without NVML: names and UUIDs from the driver's
// procfs under procRoot, memory from the driver itself over the RM ABI on
// <devDir>/nvidiactl. Excluded GPUs are left out. Index follows the minor
// order, as nvidia-smi's does on a machine without PCI reordering.
func Discover(procRoot, devDir string) (string, []GPU, error) {
	info, err := ReadDriverInfo(procRoot)
	if err != nil {
		return "", nil, err
	}
	c, err := Open(devDir, info.Major())
	if err != nil {
		return info.Version, nil, err
	}
	defer c.Close()
	cards, err := c.Cards()
	if err != nil {
		return info.Version, nil, err
	}
	byMinor := make(map[int]Card, len(cards))
	for _, cd := range cards {
		byMinor[cd.Minor] = cd
	}
	var gpus []GPU
	for _, pg := range info.GPUs {
		if pg.Excluded {
			continue
		}
		cd, ok := byMinor[pg.Minor]
		if !ok {
			return info.Version, nil, fmt.Errorf("GPU %s (minor %d) is in procfs but not in the driver's card list", pg.BusID, pg.Minor)
		}
		mi, err := c.Memory(cd.GPUID)
		if err != nil {
			return info.Version, nil, err
		}
		gpus = append(gpus, GPU{
			Index: len(gpus), Minor: pg.Minor, UUID: pg.UUID, Name: pg.Model, BusID: pg.BusID,
			MemoryTotal: mi.Total, MemoryFree: mi.Free,
		})
	}
	return info.Version, gpus, nil
}
