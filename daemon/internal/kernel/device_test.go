package kernel

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNewMissingNodeIsNoModule(t *testing.T) {
	_, err := New(WithDevicePath(filepath.Join(t.TempDir(), "cgpu")))
	if !errors.Is(err, ErrNoModule) || !errors.Is(err, unix.ENOENT) {
		t.Fatalf("New on a missing node: %v, want ErrNoModule and ENOENT", err)
	}
}

// /dev/null answers every ioctl with ENOTTY: the errno comes back in the
// chain with no sentinel, as an ABI mismatch would.
func TestDeviceErrnoWithoutSentinel(t *testing.T) {
	d, err := New(WithDevicePath("/dev/null"))
	if err != nil {
		t.Skipf("cannot open /dev/null read-write: %v", err)
	}
	defer d.Close()
	_, err = d.Version(context.Background())
	if !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("version on /dev/null: %v, want ENOTTY", err)
	}
	for _, s := range []error{ErrNotFound, ErrExists, ErrNoSpace, ErrBusy, ErrInvalid} {
		if errors.Is(err, s) {
			t.Errorf("ENOTTY matches %v", s)
		}
	}
	if _, err := d.List(context.Background()); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("list on /dev/null: %v", err)
	}
}

func TestDeviceValidatesNamesBeforeTheCall(t *testing.T) {
	d, err := New(WithDevicePath("/dev/null"))
	if err != nil {
		t.Skipf("cannot open /dev/null read-write: %v", err)
	}
	defer d.Close()
	for _, name := range []string{"", "..", "a b", "ä", strings.Repeat("n", NameLen)} {
		_, err := d.Create(context.Background(), CreateRequest{Name: name, MemLimit: 1})
		// /dev/null would say ENOTTY: EINVAL proves no call was made.
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("create %q: %v, want ErrInvalid before the call", name, err)
		}
	}
}

func TestDeviceDoneContextMakesNoCall(t *testing.T) {
	d, err := New(WithDevicePath("/dev/null"))
	if err != nil {
		t.Skipf("cannot open /dev/null read-write: %v", err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// /dev/null would answer ENOTTY: context.Canceled proves no call.
	if err := d.Destroy(ctx, 1, false); !errors.Is(err, context.Canceled) || errors.Is(err, unix.ENOTTY) {
		t.Errorf("destroy with a done context: %v", err)
	}
}

// Every errno the uapi header documents maps to its sentinel, with the errno
// kept in the chain; ENXIO (attach with an unhookable driver loaded) says
// where to look.
func TestDocumentedErrnosHaveSentinels(t *testing.T) {
	for errno, want := range map[unix.Errno]error{
		unix.ENOENT: ErrNotFound, unix.EEXIST: ErrExists, unix.ENOSPC: ErrNoSpace,
		unix.EBUSY: ErrBusy, unix.EINVAL: ErrInvalid, unix.ENXIO: ErrUnhooked,
	} {
		err := errnoError("attach", "", errno)
		if !errors.Is(err, want) || !errors.Is(err, errno) {
			t.Errorf("%s: %v does not match both %v and the errno", unix.ErrnoName(errno), err, want)
		}
	}
	if msg := errnoError("attach", "", unix.ENXIO).Error(); !strings.Contains(msg, "/proc/cgpu_km/hooks") {
		t.Errorf("ENXIO's message does not say where to look: %q", msg)
	}
}
