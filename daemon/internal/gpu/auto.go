package gpu

import (
	"context"
	"errors"
	"sync"

	"github.com/sirupsen/logrus"
)

// Auto discovers through NVML where libnvidia-ml.so.1 loads and through
// procfs otherwise, and logs which (at info when the source changes).
type Auto struct {
	nvml   Discoverer // nil: WithoutNVML
	procfs Discoverer
	log    logrus.FieldLogger

	mu   sync.Mutex
	last string // source of the last discovery
}

var _ Discoverer = (*Auto)(nil)

// New returns the discoverer the daemon uses.
func New(opts ...Option) *Auto {
	o := newOptions(opts)
	a := &Auto{procfs: NewProcfs(opts...), log: o.log}
	if !o.noNVML {
		a.nvml = NewNVML(opts...)
	}
	return a
}

// Discover implements Discoverer.
func (a *Auto) Discover(ctx context.Context) (Inventory, error) {
	why := "NVML disabled"
	if a.nvml != nil {
		inv, err := a.nvml.Discover(ctx)
		if err == nil {
			a.logSource(inv, "")
			return inv, nil
		}
		if !errors.Is(err, ErrNVMLUnavailable) {
			return Inventory{}, err
		}
		why = err.Error()
	}
	inv, err := a.procfs.Discover(ctx)
	if err != nil {
		return Inventory{}, err
	}
	a.logSource(inv, why)
	return inv, nil
}

func (a *Auto) logSource(inv Inventory, why string) {
	a.mu.Lock()
	changed := a.last != inv.Source
	a.last = inv.Source
	a.mu.Unlock()
	e := a.log.WithFields(logrus.Fields{"source": inv.Source, "gpus": len(inv.GPUs), "driver": inv.DriverVersion})
	if why != "" {
		e = e.WithField("nvml", why)
	}
	if changed {
		e.Info("GPUs discovered")
	} else {
		e.Debug("GPUs discovered")
	}
}
