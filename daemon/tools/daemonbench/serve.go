package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cgpu-dev/cgpu/daemon/internal/cgroup"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/cgpu-dev/cgpu/daemon/internal/daemon"
	"github.com/cgpu-dev/cgpu/daemon/internal/gpu"
	"github.com/cgpu-dev/cgpu/daemon/internal/instance"
	"github.com/cgpu-dev/cgpu/daemon/internal/kernel"
	"github.com/cgpu-dev/cgpu/daemon/internal/server"
	"github.com/cgpu-dev/cgpu/daemon/internal/state"
	"github.com/sirupsen/logrus"
)

// memFilter is the device filter without eBPF.
type memFilter struct {
	mu     sync.Mutex
	pinned map[uint64][]uint32
}

func (f *memFilter) Apply(_ context.Context, _ string, id uint64, minors []uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pinned[id] = slices.Clone(minors)
	return nil
}

func (f *memFilter) Remove(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pinned, id)
	return nil
}

func (f *memFilter) Pinned(context.Context) ([]uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]uint64, 0, len(f.pinned))
	for id := range f.pinned {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Stale: the device numbers never change here.
func (f *memFilter) Stale(context.Context) ([]uint64, error) { return nil, nil }

// runServer is the daemon side: the Manager and the API server as cgpud
// builds them, with the kernel and the filter swapped for in-memory ones,
// and the empty handler on a second socket.
func runServer(dir string, real, filter bool) error {
	log := logrus.New()
	log.SetOutput(io.Discard)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	var m daemon.Manager
	if real {
		c := config.Default()
		c.StateDir = filepath.Join(dir, "state")
		c.DeviceFilter = filter
		parts, err := daemon.Build(ctx, c, log)
		if err != nil {
			return err
		}
		defer parts.Close()
		m = parts.Manager
	} else {
		mm, closeFn, err := fakeManager(dir, log)
		if err != nil {
			return err
		}
		defer closeFn()
		m = mm
	}
	if err := m.Reconcile(ctx); err != nil {
		return err
	}
	return serveOn(ctx, dir, m, log)
}

// fakeManager is the Manager over kernel.Fake and the in-memory filter,
// with bbolt real.
func fakeManager(dir string, log *logrus.Logger) (daemon.Manager, func(), error) {
	inv := gpu.Inventory{DriverVersion: "550.54.15", Source: "procfs"}
	for i := range mockGPUs {
		inv.GPUs = append(inv.GPUs, gpu.GPU{Index: i, Minor: uint32(i), UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i),
			Name: "Mock GPU", BusID: fmt.Sprintf("0000:%02x:00.0", i+1), MemoryTotal: gpuMemory})
	}
	store, err := state.Open(state.WithDir(filepath.Join(dir, "state")))
	if err != nil {
		return nil, nil, err
	}
	cg := cgroup.New(cgroup.WithRoot(filepath.Join(dir, "cgroup")), cgroup.WithFSCheck(func(string) error { return nil }))
	m, err := instance.New(instance.WithKernel(kernel.NewFake()), instance.WithInventory(inv), instance.WithStore(store),
		instance.WithDeviceFilter(&memFilter{pinned: map[uint64][]uint32{}}), instance.WithCgroups(cg),
		instance.WithLogger(log), instance.WithSweep(time.Hour))
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return m, func() { m.Close(); store.Close() }, nil
}

// serveOn serves m on api.sock and the empty handler on empty.sock until
// ctx ends.
func serveOn(ctx context.Context, dir string, m daemon.Manager, log *logrus.Logger) error {
	gid := os.Getgid()
	lookup := func(string) (int, error) { return gid, nil }
	ln, err := server.Listen(filepath.Join(dir, "api.sock"), server.SocketOptions{Group: "bench", Lookup: lookup, Log: log})
	if err != nil {
		return err
	}
	srv := server.New(m, server.WithLogger(log), server.WithAccess(server.Access{ReadGID: int64(gid), WriteGID: int64(gid)}),
		server.WithCollectors(daemon.Collector(m, log)))
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	eln, err := server.Listen(filepath.Join(dir, "empty.sock"), server.SocketOptions{Group: "bench", Lookup: lookup, Log: log})
	if err != nil {
		return err
	}
	// The empty handler reads the body and answers as a create would.
	empty := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{}`)
	})}
	go empty.Serve(eln)
	defer empty.Shutdown(context.Background())
	fmt.Println("ready")
	<-ctx.Done()
	return nil
}
