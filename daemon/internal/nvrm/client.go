package nvrm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Client is one RM client on the driver's control node. Its ioctl bodies
// live in an mmap'd arena outside the Go heap, so the embedded pointers the
// driver dereferences (alloc and control params) stay valid and unmoved for
// the duration of each call.
type Client struct {
	ctl     *os.File
	arena   []byte
	major   int
	hClient uint32
	next    uint32
}

const (
	arenaSize   = 2 * offParams
	offBody     = 0     // the escape's own struct
	offParams   = 16384 // what it points to; the body may be up to 16 KiB
	handleBase  = 0xcb000000
	maxCardInfo = 64 // entries asked for, as tinygrad does
)

// Open creates an RM client on <devDir>/nvidiactl. driverMajor selects
// version-dependent layouts (0 = newest).
func Open(devDir string, driverMajor int) (*Client, error) {
	f, err := os.OpenFile(filepath.Join(devDir, "nvidiactl"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open control node: %w", err)
	}
	arena, err := unix.Mmap(-1, 0, arenaSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("map ioctl arena: %w", err)
	}
	c := &Client{ctl: f, arena: arena, major: driverMajor, next: handleBase}
	if err := c.checkVersion(); err != nil {
		c.release()
		return nil, err
	}
	h, err := c.alloc(0, 0, 0, ClassRootClient, nil)
	if err != nil {
		c.release()
		return nil, fmt.Errorf("allocate RM client: %w", err)
	}
	c.hClient = h
	return c, nil
}

func (c *Client) release() {
	unix.Munmap(c.arena)
	c.ctl.Close()
}

// Close frees the client and everything under it, then closes the node.
func (c *Client) Close() error {
	err := c.free(c.hClient, c.hClient)
	c.release()
	return err
}

func (c *Client) body(size uintptr) unsafe.Pointer {
	clear(c.arena[offBody : offBody+int(size)])
	return unsafe.Pointer(&c.arena[offBody])
}

func (c *Client) params(size uintptr) unsafe.Pointer {
	clear(c.arena[offParams : offParams+int(size)])
	return unsafe.Pointer(&c.arena[offParams])
}

func (c *Client) ioctl(nr uint32, size uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, c.ctl.Fd(), uintptr(IOWR(nr, uint32(size))),
		uintptr(unsafe.Pointer(&c.arena[offBody])))
	if errno != 0 {
		return errno
	}
	return nil
}

// checkVersion does what libcuda does first: ask the driver's version, then
// confirm it strictly, so the driver treats this fd like any CUDA client's.
func (c *Client) checkVersion() error {
	v := (*rmAPIVersion)(c.body(unsafe.Sizeof(rmAPIVersion{})))
	v.Cmd = rmAPIVersionCmdQuery
	if err := c.ioctl(EscCheckVersionStr, unsafe.Sizeof(*v)); err != nil {
		return fmt.Errorf("query driver API version: %w", err)
	}
	ver := v.VersionString
	v = (*rmAPIVersion)(c.body(unsafe.Sizeof(rmAPIVersion{})))
	v.VersionString = ver
	if err := c.ioctl(EscCheckVersionStr, unsafe.Sizeof(*v)); err != nil {
		return fmt.Errorf("driver API version check for %q: %w", bytes.TrimRight(ver[:], "\x00"), err)
	}
	return nil
}

func (c *Client) newHandle() uint32 {
	c.next++
	return c.next
}

// alloc issues RM_ALLOC (NVOS21) and returns the new handle; h 0 lets the
// driver pick one. params, if any, is copied into the arena first.
func (c *Client) alloc(hRoot, hParent, h, class uint32, params []byte) (uint32, error) {
	var pp uint64
	if len(params) > 0 {
		dst := unsafe.Slice((*byte)(c.params(uintptr(len(params)))), len(params))
		copy(dst, params)
		pp = uint64(uintptr(unsafe.Pointer(&dst[0])))
	}
	a := (*os21Alloc)(c.body(unsafe.Sizeof(os21Alloc{})))
	*a = os21Alloc{HRoot: hRoot, HObjectParent: hParent, HObjectNew: h, HClass: class,
		PAllocParms: pp, ParamsSize: uint32(len(params))}
	if err := c.ioctl(EscRMAlloc, unsafe.Sizeof(*a)); err != nil {
		return 0, fmt.Errorf("RM_ALLOC class %#x: %w", class, err)
	}
	if a.Status != uint32(StatusOK) {
		return 0, fmt.Errorf("RM_ALLOC class %#x: %w", class, Status(a.Status))
	}
	return a.HObjectNew, nil
}

func (c *Client) free(hRoot, h uint32) error {
	f := (*os00Free)(c.body(unsafe.Sizeof(os00Free{})))
	*f = os00Free{HRoot: hRoot, HObjectOld: h}
	if err := c.ioctl(EscRMFree, unsafe.Sizeof(*f)); err != nil {
		return fmt.Errorf("RM_FREE %#x: %w", h, err)
	}
	if f.Status != uint32(StatusOK) {
		return fmt.Errorf("RM_FREE %#x: %w", h, Status(f.Status))
	}
	return nil
}

// control issues RM_CONTROL with params (size bytes, already in the arena).
func (c *Client) control(hObject, cmd uint32, size uintptr) error {
	p := uint64(uintptr(unsafe.Pointer(&c.arena[offParams])))
	ctl := (*os54Control)(c.body(unsafe.Sizeof(os54Control{})))
	*ctl = os54Control{HClient: c.hClient, HObject: hObject, Cmd: cmd, Params: p, ParamsSize: uint32(size)}
	if err := c.ioctl(EscRMControl, unsafe.Sizeof(*ctl)); err != nil {
		return fmt.Errorf("RM_CONTROL %#x: %w", cmd, err)
	}
	if ctl.Status != uint32(StatusOK) {
		return fmt.Errorf("RM_CONTROL %#x: %w", cmd, Status(ctl.Status))
	}
	return nil
}

// Card is one GPU as CARD_INFO reports it.
type Card struct {
	GPUID  uint32
	Minor  int
	BusID  string
	FBSize uint64 // bytes of BAR1 aperture on real hardware; not the memory size
}

// Cards lists the GPUs the driver has probed (CARD_INFO).
func (c *Client) Cards() ([]Card, error) {
	size := uintptr(maxCardInfo) * unsafe.Sizeof(cardInfo{})
	if size > offParams {
		return nil, errors.New("card info does not fit the arena")
	}
	entries := unsafe.Slice((*cardInfo)(c.body(size)), maxCardInfo)
	if err := c.ioctl(EscCardInfo, size); err != nil {
		return nil, fmt.Errorf("CARD_INFO: %w", err)
	}
	var cards []Card
	for _, e := range entries {
		if e.Valid == 0 {
			continue
		}
		cards = append(cards, Card{
			GPUID:  e.GPUID,
			Minor:  int(e.MinorNumber),
			BusID:  fmt.Sprintf("%04x:%02x:%02x.0", e.PCIDomain, e.PCIBus, e.PCISlot),
			FBSize: e.FBSize,
		})
	}
	return cards, nil
}

// MemInfo is a GPU's frame buffer as RM reports it to a CUDA client.
type MemInfo struct {
	Total uint64 // bytes
	Free  uint64 // bytes
}

// Memory asks RM for one GPU's memory: it opens a device and subdevice of
// its own for the GPU and sends FB_GET_INFO_V2, as cuMemGetInfo does.
func (c *Client) Memory(gpuID uint32) (MemInfo, error) {
	var mi MemInfo
	id := (*gpuGetIDInfoV2)(c.params(unsafe.Sizeof(gpuGetIDInfoV2{})))
	id.GPUID = gpuID
	if err := c.control(c.hClient, CtrlGPUGetIDInfoV2, unsafe.Sizeof(*id)); err != nil {
		return mi, fmt.Errorf("GPU %#x: device instance: %w", gpuID, err)
	}
	inst := id.DeviceInstance

	dp := deviceAllocParams{DeviceID: inst}
	hDev, err := c.alloc(c.hClient, c.hClient, c.newHandle(), ClassDevice,
		unsafe.Slice((*byte)(unsafe.Pointer(&dp)), unsafe.Sizeof(dp)))
	if err != nil {
		return mi, fmt.Errorf("GPU %#x: %w", gpuID, err)
	}
	defer c.free(c.hClient, hDev)
	sp := subdeviceAllocParams{}
	hSub, err := c.alloc(c.hClient, hDev, c.newHandle(), ClassSubdevice,
		unsafe.Slice((*byte)(unsafe.Pointer(&sp)), unsafe.Sizeof(sp)))
	if err != nil {
		return mi, fmt.Errorf("GPU %#x: %w", gpuID, err)
	}

	size := uintptr(fbGetInfoV2Size(c.major))
	fb := (*fbGetInfoV2)(c.params(size))
	idx := []uint32{FBInfoTotalRAMSize, FBInfoHeapSize, FBInfoHeapFree}
	fb.FBInfoListSize = uint32(len(idx))
	for i, x := range idx {
		fb.FBInfoList[i].Index = x
	}
	if err := c.control(hSub, CtrlFBGetInfoV2, size); err != nil {
		return mi, fmt.Errorf("GPU %#x: memory info: %w", gpuID, err)
	}
	mi.Total = uint64(fb.FBInfoList[0].Data) << 10
	mi.Free = uint64(fb.FBInfoList[2].Data) << 10
	return mi, nil
}
