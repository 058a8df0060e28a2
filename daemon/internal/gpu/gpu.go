// Package gpu discovers the node's NVIDIA GPUs: through NVML where
// libnvidia-ml.so.1 loads, else through the driver's procfs files and the
// RM ABI (internal/nvrm), which is what the VM's nvmock.ko offers.
package gpu

import "context"

// GPU is one device as the daemon uses it.
type GPU struct {
	Index       int    // NVML index; procfs order (by bus id) otherwise
	Minor       uint32 // /dev/nvidia<Minor>
	UUID        string // GPU-xxxxxxxx-...
	Name        string
	BusID       string // 0000:01:00.0
	MemoryTotal uint64 // bytes
}

// Inventory is the result of one discovery.
type Inventory struct {
	DriverVersion string
	Source        string // "nvml" or "procfs"
	GPUs          []GPU
}

// Discoverer finds the GPUs.
type Discoverer interface {
	Discover(ctx context.Context) (Inventory, error)
}
