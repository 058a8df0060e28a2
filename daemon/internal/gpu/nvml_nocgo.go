//go:build !cgo

package gpu

import (
	"context"
	"fmt"
)

// NVML stands in for the NVML discoverer of cgo builds: go-nvml dlopens
// libnvidia-ml.so.1 through cgo and does not compile without it, and the
// guest binaries are built with CGO_ENABLED=0.
type NVML struct{}

var _ Discoverer = (*NVML)(nil)

// NewNVML returns a discoverer that always reports ErrNVMLUnavailable.
func NewNVML(opts ...Option) *NVML { return &NVML{} }

// Discover implements Discoverer.
func (*NVML) Discover(ctx context.Context) (Inventory, error) {
	return Inventory{}, fmt.Errorf("%w: built without cgo", ErrNVMLUnavailable)
}
