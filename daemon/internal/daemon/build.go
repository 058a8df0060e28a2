package daemon

import (
	"context"
	"sync/atomic"

	"errors"
	"fmt"
	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"path/filepath"

	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/cgpu-dev/cgpu/daemon/internal/devfilter"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/instance"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Build makes the real parts: cgpu.ko's control device (loaded with
// modprobe first when load_module is set), GPU discovery (NVML, else the
// driver's procfs and RM ABI), the bbolt store, the eBPF device filter, and
// the instance Manager over them. A missing module is not fatal: the
// daemon serves, reports itself degraded, and refuses changes with 503
// until it is restarted with the module loaded.
func Build(ctx context.Context, c config.Config, log *logrus.Logger) (Parts, error) {
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (Parts, error) {
		_ = closeAll()
		return Parts{}, err
	}
	opts := []instance.Option{
		instance.WithLogger(log),
		instance.WithPlacement(c.Placement),
		instance.WithSweep(c.SweepInterval),
		instance.WithModuleVersionFile(filepath.Join(c.ProcRoot, "cgpu_km", "version")),
	}

	if c.LoadModule {
		l := kernel.NewLoader(kernel.WithProcRoot(c.ProcRoot))
		if err := l.Ensure(ctx); err != nil {
			log.WithError(err).Warn("load_module: could not load cgpu.ko")
		}
	}
	devPath := filepath.Join(c.DevDir, "cgpu")
	dev, err := kernel.New(kernel.WithDevicePath(devPath))
	switch {
	case err == nil:
		closers = append(closers, dev.Close)
		opts = append(opts, instance.WithKernel(dev))
	case errors.Is(err, kernel.ErrNoModule):
		log.WithField("device", devPath).Warn("cgpu.ko is not loaded: serving read-only; creates fail until cgpud restarts with the module")
	default:
		return fail(fmt.Errorf("kernel: %w", err))
	}

	opts = append(opts, instance.WithDiscoverer(gpu.New(
		gpu.WithProcRoot(c.ProcRoot), gpu.WithDevDir(c.DevDir), gpu.WithLogger(log))))

	store, err := state.Open(state.WithDir(c.StateDir))
	if err != nil {
		return fail(fmt.Errorf("state: %w", err))
	}
	closers = append(closers, store.Close)
	opts = append(opts, instance.WithStore(store))

	cgroups := cgroup.New(cgroup.WithRoot(c.CgroupRoot))
	opts = append(opts, instance.WithCgroups(cgroups))

	if c.DeviceFilter {
		f, err := devfilter.New(devfilter.WithBPFFS(c.BPFFSRoot), devfilter.WithProcRoot(c.ProcRoot),
			devfilter.WithDevRoot(c.DevDir), devfilter.WithCgroupRoot(c.CgroupRoot), devfilter.WithLogger(log))
		if err != nil {
			return fail(fmt.Errorf("device filter: %w", err))
		}
		// Creates fail closed when filters cannot be attached; say why now.
		if err := f.Probe(ctx); err != nil {
			log.WithError(err).Error("device filters unavailable: creates will fail (set device_filter = false to run without)")
		}
		opts = append(opts, instance.WithDeviceFilter(f))
	}

	m, err := instance.New(opts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, m.Close)
	status := "serving"
	if dev == nil {
		status = "degraded: cgpu.ko not loaded"
	}
	pm := withPlacement(m, c.Placement)
	return Parts{
		Manager:    pm,
		Collectors: []prometheus.Collector{Collector(pm, log)},
		Reload: func(c config.Config) {
			pm.placement.Store(c.Placement)
			// A driver module reloaded by hand: bring the device filters
			// up to date now rather than at the next tick.
			m.RefreshFiltersSoon()
		},
		Close:  closeAll,
		Status: status,
	}, nil
}

// placing fills in the configured placement on creates that name neither
// GPUs nor a placement, so that a reload changes it without touching the
// Manager.
type placing struct {
	Manager
	placement atomic.Value // string
}

func withPlacement(m Manager, p string) *placing {
	pm := &placing{Manager: m}
	pm.placement.Store(p)
	return pm
}

func (p *placing) CreateInstance(ctx context.Context, req v1.CreateRequest) (v1.Instance, error) {
	if len(req.GPUs) == 0 && req.Placement == "" {
		req.Placement = p.placement.Load().(string)
	}
	return p.Manager.CreateInstance(ctx, req)
}
