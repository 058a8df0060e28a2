// Package kernel talks to cgpu.ko through /dev/cgpu (see
// kmod/include/uapi/cgpu.h). Client is the narrow interface the daemon
// uses; Device is the real one and Fake an in-memory one with the same
// rules, for tests and the host benchmark.
package kernel

import (
	"context"
	"errors"
)

// Sentinels that kernel errors match with errors.Is; the errno is kept in
// the chain as well (errors.Is(err, unix.ENOENT) holds too).
var (
	ErrNotFound = errors.New("no such instance or cgroup") // ENOENT
	ErrExists   = errors.New("already exists")             // EEXIST
	ErrNoSpace  = errors.New("GPU instance cap reached")   // ENOSPC
	ErrBusy     = errors.New("instance holds memory")      // EBUSY
	ErrInvalid  = errors.New("invalid argument")           // EINVAL
	ErrNoModule = errors.New("cgpu.ko is not loaded")      // /dev/cgpu missing
	// ErrUnhooked: attach refused because a loaded driver module's entry
	// points cannot be hooked, so the slice would not be enforced.
	ErrUnhooked = errors.New("a loaded NVIDIA driver module cannot be hooked (see /proc/cgpu_km/hooks): the slice would not be enforced") // ENXIO
)

// Version is what the module speaks.
type Version struct {
	ABIMajor, ABIMinor uint32
	MaxInst            uint32 // instances per GPU
	NameLen            uint32 // bytes of a name, NUL included
}

// CreateRequest makes one kernel instance on one GPU.
type CreateRequest struct {
	Name     string // 1..63 of [A-Za-z0-9_.-]
	GPU      uint32 // minor of /dev/nvidiaN
	MemLimit uint64 // bytes
	Weight   uint32 // 0 means 1
}

// Stats is one kernel instance.
type Stats struct {
	ID             uint64
	Name           string
	GPU            uint32
	Weight         uint32
	MemLimit       uint64
	MemUsed        uint64
	MemPeak        uint64
	Allocs         uint64
	RefusedAllocs  uint64
	RefusedManaged uint64
	LiveAllocs     uint64
	Procs          uint32
	Cgroups        uint32
}

// Client is what the daemon needs from the module.
type Client interface {
	Version(ctx context.Context) (Version, error)
	Create(ctx context.Context, req CreateRequest) (id uint64, err error)
	Destroy(ctx context.Context, id uint64, force bool) error
	Attach(ctx context.Context, id, cgroupID uint64) error
	Detach(ctx context.Context, id, cgroupID uint64) error
	// SetLimit and SetWeight change a live instance; a limit below the
	// memory in use fails with ErrBusy and changes nothing.
	SetLimit(ctx context.Context, id, memLimit uint64) error
	SetWeight(ctx context.Context, id uint64, weight uint32) error
	Stats(ctx context.Context, id uint64) (Stats, error)
	// List returns every instance id, ascending.
	List(ctx context.Context) ([]uint64, error)
	Close() error
}
