// Package nvrm speaks the small part of the NVIDIA kernel driver's resource
// manager (RM) ABI that cgpu needs from user space: enough to find the GPUs a
// driver exposes and to ask it for each GPU's memory, on the real driver and
// on nvmock.ko alike. The layouts mirror kmod/nv_abi.h (our own definitions,
// from docs/nvidia-abi.md); abi_test.go checks every size and offset
// against that header with the C compiler.
package nvrm

// ioctl encoding, as user space builds it: _IOWR('F', nr, size).
const (
	iocNRBits   = 8
	iocTypeBits = 8
	iocSizeBits = 14

	iocNRShift   = 0
	iocTypeShift = iocNRShift + iocNRBits
	iocSizeShift = iocTypeShift + iocTypeBits
	iocDirShift  = iocSizeShift + iocSizeBits

	iocWrite = 1
	iocRead  = 2

	ioctlMagic = 'F'

	// MaxIoctlSize is the largest body the 14-bit size field can carry.
	MaxIoctlSize = 1<<iocSizeBits - 1
)

// IOWR encodes an nvidia.ko escape with a body of size bytes.
func IOWR(nr, size uint32) uint32 {
	return (iocRead|iocWrite)<<iocDirShift | size<<iocSizeShift |
		ioctlMagic<<iocTypeShift | nr<<iocNRShift
}

// Escapes (docs/nvidia-abi.md §2).
const (
	EscRMFree          = 0x29
	EscRMControl       = 0x2A
	EscRMAlloc         = 0x2B
	EscRMVidHeap       = 0x4A
	EscCardInfo        = 200
	EscCheckVersionStr = 210
)

// RM classes (§4).
const (
	ClassRootClient      = 0x41
	ClassDevice          = 0x80
	ClassSubdevice       = 0x2080
	ClassMemoryLocalUser = 0x40
)

// Controls (§5, §10.2).
const (
	CtrlGPUGetIDInfoV2 = 0x00000205
	CtrlFBGetInfoV2    = 0x20801303
)

// FB info indices (§5); values are KiB.
const (
	FBInfoRAMSize       = 0x07
	FBInfoTotalRAMSize  = 0x08
	FBInfoHeapSize      = 0x09
	FBInfoHeapFree      = 0x16
	FBInfoUsableRAMSize = 0x20
)

// Status is an RM status code, returned in a parameter struct's status
// field with a syscall return of 0.
type Status uint32

// Status codes (§6).
const (
	StatusOK                = Status(0x00)
	StatusInvalidArgument   = Status(0x1F)
	StatusInvalidClass      = Status(0x22)
	StatusInvalidClient     = Status(0x23)
	StatusInvalidObject     = Status(0x33)
	StatusInvalidParamStrct = Status(0x3A)
	StatusNoMemory          = Status(0x51)
	StatusNotSupported      = Status(0x56)
	StatusObjectNotFound    = Status(0x57)
	StatusGeneric           = Status(0xFFFF)
)

var statusNames = map[Status]string{
	StatusOK:                "NV_OK",
	StatusInvalidArgument:   "NV_ERR_INVALID_ARGUMENT",
	StatusInvalidClass:      "NV_ERR_INVALID_CLASS",
	StatusInvalidClient:     "NV_ERR_INVALID_CLIENT",
	StatusInvalidObject:     "NV_ERR_INVALID_OBJECT_HANDLE",
	StatusInvalidParamStrct: "NV_ERR_INVALID_PARAM_STRUCT",
	StatusNoMemory:          "NV_ERR_NO_MEMORY",
	StatusNotSupported:      "NV_ERR_NOT_SUPPORTED",
	StatusObjectNotFound:    "NV_ERR_OBJECT_NOT_FOUND",
	StatusGeneric:           "NV_ERR_GENERIC",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "NV_ERR_0x" + hex32(uint32(s))
}

// Error makes a non-OK status usable as an error.
func (s Status) Error() string { return s.String() }

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// RM_FREE, NVOS00 (16 B).
type os00Free struct {
	HRoot         uint32
	HObjectParent uint32
	HObjectOld    uint32
	Status        uint32
}

// RM_ALLOC, NVOS21 (32 B).
type os21Alloc struct {
	HRoot         uint32
	HObjectParent uint32
	HObjectNew    uint32
	HClass        uint32
	PAllocParms   uint64
	ParamsSize    uint32
	Status        uint32
}

// RM_CONTROL, NVOS54 (32 B).
type os54Control struct {
	HClient    uint32
	HObject    uint32
	Cmd        uint32
	Flags      uint32
	Params     uint64
	ParamsSize uint32
	Status     uint32
}

// CHECK_VERSION_STR (72 B).
type rmAPIVersion struct {
	Cmd           uint32
	Reply         uint32
	VersionString [64]byte
}

const rmAPIVersionCmdQuery = 0x32

// One CARD_INFO entry (72 B).
type cardInfo struct {
	Valid         uint8
	_             [3]uint8
	PCIDomain     uint32
	PCIBus        uint8
	PCISlot       uint8
	PCIFunction   uint8
	_             uint8
	PCIVendorID   uint16
	PCIDeviceID   uint16
	GPUID         uint32
	InterruptLine uint16
	_             uint16
	RegAddress    uint64
	RegSize       uint64
	FBAddress     uint64
	FBSize        uint64
	MinorNumber   uint32
	DevName       [10]uint8
	_             [2]uint8
}

// NV0080_ALLOC_PARAMETERS (56 B).
type deviceAllocParams struct {
	DeviceID        uint32
	HClientShare    uint32
	HTargetClient   uint32
	HTargetDevice   uint32
	Flags           uint32
	_               uint32
	VASpaceSize     uint64
	VAStartInternal uint64
	VALimitInternal uint64
	VAMode          uint32
	_               uint32
}

// NV2080_ALLOC_PARAMETERS (4 B).
type subdeviceAllocParams struct {
	SubDeviceID uint32
}

// NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 params (32 B).
type gpuGetIDInfoV2 struct {
	GPUID             uint32
	_                 uint32
	DeviceInstance    uint32
	SubDeviceInstance uint32
	_                 [4]uint32
}

type fbInfo struct {
	Index uint32
	Data  uint32
}

// FB_GET_INFO_V2's list length per branch (docs/nvidia-abi.md 10.9).
const (
	fbInfoMaxList    = 128 // 580 and later
	fbInfoMaxList560 = 57  // 560 to 575
	fbInfoMaxList545 = 55  // 545 to 555
	fbInfoMaxList535 = 54  // 535 and earlier
)

// NV2080_CTRL_CMD_FB_GET_INFO_V2 params: 1028 B from 580; 460, 444 or 436 B
// before (the list is shorter).
type fbGetInfoV2 struct {
	FBInfoListSize uint32
	FBInfoList     [fbInfoMaxList]fbInfo
}

// fbGetInfoV2Size is the params size a driver of the given major version
// expects; RM refuses any other size with NV_ERR_INVALID_PARAM_STRUCT.
func fbGetInfoV2Size(major int) uint32 {
	n := fbInfoMaxList
	switch {
	case major <= 0:
	case major < 545:
		n = fbInfoMaxList535
	case major < 560:
		n = fbInfoMaxList545
	case major < 580:
		n = fbInfoMaxList560
	}
	return uint32(4 + n*8)
}
