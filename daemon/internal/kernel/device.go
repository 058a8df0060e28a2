package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is the Client on the module's control node.
type Device struct {
	f    *os.File
	conn syscall.RawConn
}

var _ Client = (*Device)(nil)

type deviceOptions struct {
	path string
}

// Option configures New.
type Option func(*deviceOptions)

// WithDevicePath opens another node than /dev/cgpu.
func WithDevicePath(path string) Option { return func(o *deviceOptions) { o.path = path } }

// New opens the control node. A missing node is ErrNoModule.
func New(opts ...Option) (*Device, error) {
	o := deviceOptions{path: DevicePath}
	for _, opt := range opts {
		opt(&o)
	}
	f, err := os.OpenFile(o.path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open %s: %w (%w)", o.path, ErrNoModule, err)
		}
		return nil, fmt.Errorf("open %s: %w", o.path, err)
	}
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", o.path, err)
	}
	return &Device{f: f, conn: conn}, nil
}

// ioctl issues one command with arg pointing at its structure. The
// structures hold no Go pointers (List's buffer travels as a uint64 and is
// kept alive by its caller).
func (d *Device) ioctl(req uint, arg unsafe.Pointer) (unix.Errno, error) {
	var errno unix.Errno
	err := d.conn.Control(func(fd uintptr) {
		for {
			_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
			if e != unix.EINTR {
				errno = e
				return
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return errno, nil
}

// do runs a command, unless ctx is done already, and turns its errno into
// an *Error. A command itself is not interruptible: the module answers at
// once.
func (d *Device) do(ctx context.Context, op, detail string, req uint, arg unsafe.Pointer) error {
	what := strings.TrimSpace("cgpu " + op + " " + detail)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	errno, err := d.ioctl(req, arg)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if errno != 0 {
		return errnoError(op, detail, errno)
	}
	return nil
}

// Version implements Client.
func (d *Device) Version(ctx context.Context) (Version, error) {
	var v cgpuVersion
	if err := d.do(ctx, "version", "", iocVersion, unsafe.Pointer(&v)); err != nil {
		return Version{}, err
	}
	return Version{ABIMajor: v.ABIMajor, ABIMinor: v.ABIMinor, MaxInst: v.MaxInst, NameLen: v.NameLen}, nil
}

// Create implements Client.
func (d *Device) Create(ctx context.Context, req CreateRequest) (uint64, error) {
	if err := ValidName(req.Name); err != nil {
		return 0, invalid("create", err)
	}
	c := cgpuCreate{MemLimit: req.MemLimit, GPU: req.GPU, Weight: req.Weight}
	copy(c.Name[:], req.Name)
	if err := d.do(ctx, "create", fmt.Sprintf("%q on GPU %d", req.Name, req.GPU), iocCreate, unsafe.Pointer(&c)); err != nil {
		return 0, err
	}
	return c.ID, nil
}

// Destroy implements Client.
func (d *Device) Destroy(ctx context.Context, id uint64, force bool) error {
	c := cgpuDestroy{ID: id}
	if force {
		c.Flags = destroyForce
	}
	return d.do(ctx, "destroy", fmt.Sprintf("instance %d", id), iocDestroy, unsafe.Pointer(&c))
}

// Attach implements Client.
func (d *Device) Attach(ctx context.Context, id, cgroupID uint64) error {
	c := cgpuAttach{ID: id, CgroupID: cgroupID}
	return d.do(ctx, "attach", fmt.Sprintf("cgroup %d to instance %d", cgroupID, id), iocAttach, unsafe.Pointer(&c))
}

// Detach implements Client.
func (d *Device) Detach(ctx context.Context, id, cgroupID uint64) error {
	c := cgpuAttach{ID: id, CgroupID: cgroupID}
	return d.do(ctx, "detach", fmt.Sprintf("cgroup %d from instance %d", cgroupID, id), iocDetach, unsafe.Pointer(&c))
}

// SetLimit implements Client.
func (d *Device) SetLimit(ctx context.Context, id, memLimit uint64) error {
	c := cgpuSet{ID: id, MemLimit: memLimit, Flags: setMemLimit}
	return d.do(ctx, "set", fmt.Sprintf("limit of instance %d to %d", id, memLimit), iocSet, unsafe.Pointer(&c))
}

// SetWeight implements Client.
func (d *Device) SetWeight(ctx context.Context, id uint64, weight uint32) error {
	c := cgpuSet{ID: id, Weight: weight, Flags: setWeight}
	return d.do(ctx, "set", fmt.Sprintf("weight of instance %d to %d", id, weight), iocSet, unsafe.Pointer(&c))
}

// Stats implements Client.
func (d *Device) Stats(ctx context.Context, id uint64) (Stats, error) {
	s := cgpuStats{ID: id}
	if err := d.do(ctx, "stats", fmt.Sprintf("instance %d", id), iocStats, unsafe.Pointer(&s)); err != nil {
		return Stats{}, err
	}
	name := s.Name[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return Stats{
		ID: s.ID, Name: string(name), GPU: s.GPU, Weight: s.Weight,
		MemLimit: s.MemLimit, MemUsed: s.MemUsed, MemPeak: s.MemPeak,
		Allocs: s.Allocs, RefusedAllocs: s.RefusedAllocs, RefusedManaged: s.RefusedManaged,
		LiveAllocs: s.LiveAllocs, Procs: s.NrProcs, Cgroups: s.NrCgroups,
	}, nil
}

// listInitialCapacity fits a node of 8 full GPUs in one call.
const listInitialCapacity = 8 * MaxInstPerGPU

// List implements Client. The buffer grows and the call repeats while the
// module has more instances than fit (creates may race with it).
func (d *Device) List(ctx context.Context) ([]uint64, error) {
	capacity := uint32(listInitialCapacity)
	for {
		ids := make([]uint64, capacity)
		l := cgpuList{IDs: uint64(uintptr(unsafe.Pointer(&ids[0]))), Capacity: capacity}
		err := d.do(ctx, "list", "", iocList, unsafe.Pointer(&l))
		runtime.KeepAlive(ids)
		if err != nil {
			return nil, err
		}
		if l.Count <= capacity {
			return ids[:l.Count:l.Count], nil
		}
		if capacity == ListMaxCapacity {
			return nil, fmt.Errorf("cgpu list: %d instances, more than the %d a list returns", l.Count, ListMaxCapacity)
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cgpu list: %w", err)
		}
		capacity = min(l.Count+l.Count/4, ListMaxCapacity)
	}
}

// Close implements Client.
func (d *Device) Close() error { return d.f.Close() }
