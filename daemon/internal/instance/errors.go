package instance

import (
	"errors"
	"fmt"
)

// Sentinels every Manager error wraps (errors.Is), so the API layer can map
// them to HTTP statuses without reading messages.
var (
	ErrInvalid     = errors.New("invalid request")    // 400
	ErrNotFound    = errors.New("not found")          // 404
	ErrConflict    = errors.New("conflict")           // 409: name/cgroup taken
	ErrNoSpace     = errors.New("no space")           // 409 no_space: cap or memory
	ErrBusy        = errors.New("busy")               // 409 busy: holds memory
	ErrUnavailable = errors.New("kernel unavailable") // 503: no module, no GPUs
)

// Error is a Manager error: Kind is one of the sentinels above, Cause the
// error it came from (nil when the Manager refused on its own). Its message
// is the one the API returns.
type Error struct {
	Kind  error
	Msg   string
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Msg + ": " + e.Cause.Error()
	}
	return e.Msg
}

// Unwrap gives errors.Is the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

func errf(kind, cause error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Cause: cause}
}
