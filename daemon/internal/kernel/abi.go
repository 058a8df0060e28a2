package kernel

import (
	"unsafe"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// The Go mirror of kmod/include/uapi/cgpu.h. abi_test.go compiles the
// header and checks every constant, size and field offset here against it;
// each mirrored field names its C field in the `c` tag for that test. The
// bounds on names, minors and memory are v1's rules, which the API and the
// Manager check as well.

// Constants of the ABI.
const (
	DevicePath      = "/dev/cgpu"
	ABIMajor        = 1
	ABIMinor        = 0
	NameLen         = v1.KernelNameMax + 1 // bytes of a name, NUL included
	MaxInstPerGPU   = 20
	MaxGPUMinor     = v1.MaxGPUMinor
	MemLimitMax     = v1.MaxMemory // bytes
	ListMaxCapacity = 65536

	iocMagic = 'C'

	destroyForce = 0x1
	setMemLimit  = 0x1
	setWeight    = 0x2
)

type cgpuVersion struct {
	ABIMajor uint32    `c:"abi_major"`
	ABIMinor uint32    `c:"abi_minor"`
	MaxInst  uint32    `c:"max_inst"`
	NameLen  uint32    `c:"name_len"`
	Reserved [4]uint64 `c:"reserved"`
}

type cgpuCreate struct {
	Name      [NameLen]byte `c:"name"`
	MemLimit  uint64        `c:"mem_limit"`
	GPU       uint32        `c:"gpu"`
	Weight    uint32        `c:"weight"`
	Flags     uint32        `c:"flags"`
	Reserved0 uint32        `c:"reserved0"`
	ID        uint64        `c:"id"`
	Reserved  [4]uint64     `c:"reserved"`
}

type cgpuDestroy struct {
	ID        uint64    `c:"id"`
	Flags     uint32    `c:"flags"`
	Reserved0 uint32    `c:"reserved0"`
	Reserved  [2]uint64 `c:"reserved"`
}

type cgpuAttach struct {
	ID        uint64    `c:"id"`
	CgroupID  uint64    `c:"cgroup_id"`
	Flags     uint32    `c:"flags"`
	Reserved0 uint32    `c:"reserved0"`
	Reserved  [2]uint64 `c:"reserved"`
}

type cgpuSet struct {
	ID       uint64    `c:"id"`
	MemLimit uint64    `c:"mem_limit"`
	Weight   uint32    `c:"weight"`
	Flags    uint32    `c:"flags"`
	Reserved [2]uint64 `c:"reserved"`
}

type cgpuStats struct {
	ID             uint64        `c:"id"`
	ReservedIn     uint64        `c:"reserved_in"`
	Name           [NameLen]byte `c:"name"`
	MemLimit       uint64        `c:"mem_limit"`
	MemUsed        uint64        `c:"mem_used"`
	MemPeak        uint64        `c:"mem_peak"`
	Allocs         uint64        `c:"allocs"`
	RefusedAllocs  uint64        `c:"refused_allocs"`
	RefusedManaged uint64        `c:"refused_managed"`
	GPU            uint32        `c:"gpu"`
	Weight         uint32        `c:"weight"`
	NrProcs        uint32        `c:"nr_procs"`
	NrCgroups      uint32        `c:"nr_cgroups"`
	LiveAllocs     uint64        `c:"live_allocs"`
	Reserved       [3]uint64     `c:"reserved"`
}

type cgpuList struct {
	IDs      uint64    `c:"ids"` // user pointer to capacity uint64s
	Capacity uint32    `c:"capacity"`
	Count    uint32    `c:"count"`
	Reserved [2]uint64 `c:"reserved"`
}

// iowr encodes _IOWR(iocMagic, nr, size) as asm-generic/ioctl.h does (the
// encoding of x86 and arm64): dir 2 bits, size 14, type 8, nr 8.
func iowr(nr, size uintptr) uint {
	const read, write = 2, 1
	return uint((read|write)<<30 | size<<16 | iocMagic<<8 | nr)
}

// The commands.
var (
	iocVersion = iowr(0x01, unsafe.Sizeof(cgpuVersion{}))
	iocCreate  = iowr(0x02, unsafe.Sizeof(cgpuCreate{}))
	iocDestroy = iowr(0x03, unsafe.Sizeof(cgpuDestroy{}))
	iocAttach  = iowr(0x04, unsafe.Sizeof(cgpuAttach{}))
	iocDetach  = iowr(0x05, unsafe.Sizeof(cgpuAttach{}))
	iocSet     = iowr(0x06, unsafe.Sizeof(cgpuSet{}))
	iocStats   = iowr(0x07, unsafe.Sizeof(cgpuStats{}))
	iocList    = iowr(0x08, unsafe.Sizeof(cgpuList{}))
)
