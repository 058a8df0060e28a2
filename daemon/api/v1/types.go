// Package v1 is cgpud's public wire contract: the JSON types of the HTTP API
// served on the daemon's Unix socket (/run/cgpu/cgpud.sock) and a Go client.
//
// Paths (all JSON; errors are an Error body with a 4xx/5xx status):
//
//	GET    /v1/version                 Version
//	GET    /v1/health                  Health (503 when not ok)
//	GET    /v1/gpus                    []GPU
//	GET    /v1/instances[?container=ID] []Instance
//	POST   /v1/instances               CreateRequest -> 201 Instance
//	GET    /v1/instances/{name}        Instance
//	PATCH  /v1/instances/{name}        ResizeRequest -> Instance
//	DELETE /v1/instances/{name}[?force=1] 204
//	GET    /v1/inspect                 Inspect
//	GET    /metrics                    Prometheus text format
//
// Memory is always in bytes. A request body is one JSON object of at most
// 64 KiB whose keys are spelt exactly as the field tags (case counts), each
// at most once, none unknown; anything else is 400. A change to a type's
// meaning gets a new API version; new optional fields may be added.
package v1

import "time"

// APIVersion is the path prefix and the value of Version.API.
const APIVersion = "v1"

// DefaultSocket is where cgpud listens.
const DefaultSocket = "/run/cgpu/cgpud.sock"

// ErrorPrefixCreate starts every error about a create that failed, as ACK's
// cGPU words it.
const ErrorPrefixCreate = "Error occurs when creating cGPU instance: "

// Placement policies for a create that names no GPU (ACK's
// ack.node.gpu.placement).
const (
	PlacementBinpack = "binpack"
	PlacementSpread  = "spread"
)

// Instance states.
const (
	StateReady = "ready"
	// StateCreating and StateDestroying are seen only while an operation is
	// in flight, or after a crash until the next start reconciles it.
	StateCreating   = "creating"
	StateDestroying = "destroying"
	// StateDegraded is an instance whose limit the daemon could not make
	// whole (Instance.Reason says why): a kernel instance that could not be
	// made again or attached to the container's cgroup (the container is
	// then denied every GPU), or a kernel limit that could not be set back
	// to the instance's. The daemon retries while an instance is degraded.
	StateDegraded = "degraded"
)

// Error is the body of every non-2xx response.
type Error struct {
	// Code is a stable machine-readable word: bad_request, not_found,
	// conflict, no_space, busy, forbidden, too_large, unavailable, internal.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Version answers GET /v1/version.
type Version struct {
	Daemon string `json:"daemon"` // cgpud's version (git describe)
	API    string `json:"api"`    // "v1"
	// Module is absent when cgpu.ko is not loaded.
	Module *Module `json:"module,omitempty"`
	Driver Driver  `json:"driver"`
}

// Module describes the loaded cgpu.ko.
type Module struct {
	Version  string `json:"version"`   // /proc/cgpu_km/version
	ABIMajor uint32 `json:"abi_major"` // from the version ioctl
	ABIMinor uint32 `json:"abi_minor"`
	MaxInst  uint32 `json:"max_inst"` // instances per GPU
}

// Driver describes the NVIDIA driver the GPUs were discovered through.
type Driver struct {
	Version string `json:"version"`
	// Source is how GPUs were discovered: "nvml" or "procfs".
	Source string `json:"source"`
}

// Health answers GET /v1/health.
type Health struct {
	Status string  `json:"status"` // "ok" or "degraded"
	Checks []Check `json:"checks"`
}

// Check is one line of Health.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// GPU is one discovered GPU and what cgpu has carved out of it.
type GPU struct {
	Index       int    `json:"index"`
	Minor       uint32 `json:"minor"` // /dev/nvidia<minor>
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	BusID       string `json:"bus_id"`
	MemoryTotal uint64 `json:"memory_total"`
	// MemoryAllocated is the sum of the limits of the instances on this GPU.
	MemoryAllocated uint64 `json:"memory_allocated"`
	// MemoryUsed is the sum of what those instances' processes hold now.
	MemoryUsed   uint64 `json:"memory_used"`
	Instances    int    `json:"instances"`
	MaxInstances int    `json:"max_instances"`
}

// CreateRequest is the body of POST /v1/instances.
type CreateRequest struct {
	// Name is optional: 1..48 characters of [A-Za-z0-9_.-], not "." or
	// ".." (ValidName); by default it is derived from ContainerID.
	Name        string `json:"name,omitempty"`
	ContainerID string `json:"container_id"`
	// Cgroup is the container's cgroup v2 path, absolute under the cgroup2
	// mount (/sys/fs/cgroup/...) or relative to it ("/kubepods/...").
	Cgroup string `json:"cgroup"`
	// GPUs are indices ("0") or UUIDs; empty means placement picks one.
	GPUs []string `json:"gpus,omitempty"`
	// Memory is the slice on each GPU, bytes, 1..MaxMemory.
	Memory uint64 `json:"memory"`
	// Weight is the compute weight, 1..max_inst; 0 means 1.
	Weight uint32 `json:"weight,omitempty"`
	// Placement is binpack (default) or spread, used when GPUs is empty.
	Placement string `json:"placement,omitempty"`
}

// ResizeRequest is the body of PATCH /v1/instances/{name}; at least one
// field is set.
type ResizeRequest struct {
	Memory *uint64 `json:"memory,omitempty"`
	Weight *uint32 `json:"weight,omitempty"`
}

// Instance is a container's slice: one kernel instance on each of its GPUs.
type Instance struct {
	Name        string        `json:"name"`
	ContainerID string        `json:"container_id"`
	Cgroup      string        `json:"cgroup"`
	CgroupID    uint64        `json:"cgroup_id"`
	Memory      uint64        `json:"memory"` // limit per GPU, bytes
	Weight      uint32        `json:"weight"`
	State       string        `json:"state"`
	Created     time.Time     `json:"created"`
	GPUs        []InstanceGPU `json:"gpus"`

	// Reason says why State is degraded; empty otherwise.
	Reason string `json:"reason,omitempty"`
}

// InstanceGPU is the kernel's view of an instance on one GPU.
type InstanceGPU struct {
	Index          int    `json:"index"`
	UUID           string `json:"uuid"`
	Minor          uint32 `json:"minor"`
	KernelID       uint64 `json:"kernel_id"`
	Used           uint64 `json:"used"`
	Peak           uint64 `json:"peak"`
	Allocs         uint64 `json:"allocs"`
	RefusedAllocs  uint64 `json:"refused_allocs"`
	RefusedManaged uint64 `json:"refused_managed"`
	Processes      uint32 `json:"processes"`
}

// Inspect answers GET /v1/inspect: the data of `cgpuctl inspect`.
type Inspect struct {
	Node      string       `json:"node"`
	Address   string       `json:"address"`
	GPUs      []InspectGPU `json:"gpus"`
	Instances []Instance   `json:"instances"`
}

// InspectGPU is one GPU column of the inspect table.
type InspectGPU struct {
	Index     int    `json:"index"`
	Allocated uint64 `json:"allocated"` // bytes
	Total     uint64 `json:"total"`     // bytes
	Used      uint64 `json:"used"`      // bytes
}
