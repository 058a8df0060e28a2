package kernel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// Error is a failed command: errors.Is matches both its sentinel (ErrNotFound,
// ...) and its errno (unix.ENOENT, ...).
type Error struct {
	Op       string     // "create", "destroy", ...
	Errno    unix.Errno // 0 when the call never reached the kernel
	Sentinel error      // nil for an errno without one (EPERM, ENOTTY, ...)
	Detail   string     // what the caller asked, for the message
}

func (e *Error) Error() string {
	msg := "cgpu " + e.Op
	if e.Detail != "" {
		msg += " " + e.Detail
	}
	switch {
	case e.Sentinel != nil && e.Errno != 0:
		return fmt.Sprintf("%s: %v (%s)", msg, e.Sentinel, unix.ErrnoName(e.Errno))
	case e.Sentinel != nil:
		return fmt.Sprintf("%s: %v", msg, e.Sentinel)
	default:
		return fmt.Sprintf("%s: %v (%s)", msg, e.Errno, unix.ErrnoName(e.Errno))
	}
}

// Unwrap gives errors.Is both the sentinel and the errno.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Sentinel != nil {
		errs = append(errs, e.Sentinel)
	}
	if e.Errno != 0 {
		errs = append(errs, e.Errno)
	}
	return errs
}

// sentinelOf maps the errnos the header documents to our sentinels.
func sentinelOf(errno unix.Errno) error {
	switch errno {
	case unix.ENOENT:
		return ErrNotFound
	case unix.EEXIST:
		return ErrExists
	case unix.ENOSPC:
		return ErrNoSpace
	case unix.EBUSY:
		return ErrBusy
	case unix.EINVAL:
		return ErrInvalid
	case unix.ENXIO:
		return ErrUnhooked
	}
	return nil
}

// errnoError is what a command that the kernel (or Fake) refused returns.
func errnoError(op, detail string, errno unix.Errno) error {
	return &Error{Op: op, Errno: errno, Sentinel: sentinelOf(errno), Detail: detail}
}

// ValidName says why cgpu.ko would refuse name, or nil: v1's rule for the
// names of kernel instances. The error carries no sentinel: the caller
// wraps it in its own.
func ValidName(name string) error { return v1.ValidKernelName(name) }

// invalid is an argument refused before the call, as the kernel would have
// refused it (EINVAL).
func invalid(op string, why error) error {
	return &Error{Op: op, Errno: unix.EINVAL, Sentinel: ErrInvalid, Detail: why.Error()}
}

var errClosed = errors.New("kernel client is closed")

// ErrABI means the loaded module speaks another major ABI than this build.
var ErrABI = errors.New("cgpu.ko speaks another ABI")

// CompatibleABI says whether a module answering v can be driven by this
// build: same major (a minor only adds commands).
func CompatibleABI(v Version) error {
	if v.ABIMajor != ABIMajor || v.NameLen != NameLen {
		return fmt.Errorf("module ABI %d.%d (names of %d bytes), this build %d.%d (%d): %w",
			v.ABIMajor, v.ABIMinor, v.NameLen, ABIMajor, ABIMinor, NameLen, ErrABI)
	}
	return nil
}
