package state

import "time"

// Instance states, as v1 names them.
const (
	StateCreating   = "creating"
	StateReady      = "ready"
	StateDestroying = "destroying"
)

// Slot is an instance's share of one GPU: one kernel instance.
type Slot struct {
	GPU   int    `json:"gpu"` // index
	UUID  string `json:"uuid"`
	Minor uint32 `json:"minor"`
	// KernelID is the kernel instance's id, 0 until it is created (and
	// while a create is in flight: recovery finds kernel instances by
	// name, so the id need not be written before the kernel is asked).
	KernelID uint64 `json:"kernel_id"`
}

// Record is one daemon instance: a container's slice on one or more GPUs.
type Record struct {
	Name        string `json:"name"`
	ContainerID string `json:"container_id"`
	// Cgroup is the path the caller gave, made relative to the cgroup2
	// mount ("/kubepods/..."); CgroupID is its directory's inode number.
	Cgroup    string    `json:"cgroup"`
	CgroupID  uint64    `json:"cgroup_id"`
	Memory    uint64    `json:"memory"` // per GPU, bytes
	Weight    uint32    `json:"weight"`
	Placement string    `json:"placement,omitempty"`
	Slots     []Slot    `json:"slots"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	// Force is the destroy's force flag while State is destroying, so a
	// destroy interrupted by a crash is finished the way it was asked.
	Force bool `json:"force,omitempty"`
	// Denied says the cgroup's device filter denies every GPU: set (before
	// the filter) while a kernel instance of the record cannot be made or
	// attached, cleared once the filter allows the record's GPUs again.
	Denied bool `json:"denied,omitempty"`
}

// Clone returns a copy that shares nothing with r.
func (r Record) Clone() Record {
	r.Slots = append([]Slot(nil), r.Slots...)
	return r
}
