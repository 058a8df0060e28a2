package instance

import "errors"

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
