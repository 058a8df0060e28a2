//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

func withNVMLLib(lib nvml.Interface) Option { return func(o *options) { o.nvmlLib = lib } }

// pciFromBusID makes the mock answer GetPciInfo with a bus id in the form
// the real library writes ("00000000:0A:00.0"); the mock leaves it empty.
func pciFromBusID(d *server.Device) {
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
		for i, c := range "0000" + strings.ToUpper(d.PciBusID) {
			p.BusId[i] = int8(c)
		}
		return p, nvml.SUCCESS
	}
}

func TestNVMLDGXA100(t *testing.T) {
	s := dgxa100.New()
	for i, nd := range s.Devices {
		d := nd.(*server.Device)
		// Minors in reverse, bus ids apart from the index: each field must
		// come from its own query.
		d.Minor = 7 - i
		d.PciBusID = fmt.Sprintf("0000:%02x:00.0", 0x1a+i*0x10)
		pciFromBusID(d)
	}
	shutdowns := 0
	s.ShutdownFunc = func() nvml.Return { shutdowns++; return nvml.SUCCESS }

	inv, err := NewNVML(withNVMLLib(s)).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.Source != "nvml" || inv.DriverVersion != "550.54.15" {
		t.Errorf("source %q driver %q, want nvml 550.54.15", inv.Source, inv.DriverVersion)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(inv.GPUs))
	}
	for i, g := range inv.GPUs {
		d := s.Devices[i].(*server.Device)
		want := GPU{
			Index: i, Minor: uint32(7 - i), UUID: d.UUID, Name: "Mock NVIDIA A100-SXM4-40GB",
			BusID: fmt.Sprintf("0000:%02x:00.0", 0x1a+i*0x10), MemoryTotal: 40960 << 20,
		}
		if g != want {
			t.Errorf("GPU %d\n got %+v\nwant %+v", i, g, want)
		}
		if !strings.HasPrefix(g.UUID, "GPU-") {
			t.Errorf("GPU %d: uuid %q", i, g.UUID)
		}
	}
	if shutdowns != 1 {
		t.Errorf("%d Shutdown calls after one Init, want 1", shutdowns)
	}
}

func TestNVMLMixedServer(t *testing.T) {
	s := server.NewServerWithGPUs("580.65.06", "12.580.65.06", 13000, gpus.H100_SXM5_80GB, gpus.A100_SXM4_40GB)
	inv, err := NewNVML(withNVMLLib(s)).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.GPUs) != 2 || inv.GPUs[0].MemoryTotal != gpus.H100_SXM5_80GB.MemoryMB<<20 ||
		inv.GPUs[1].MemoryTotal != 40960<<20 || inv.GPUs[0].Name != gpus.H100_SXM5_80GB.Name {
		t.Errorf("inventory %+v", inv)
	}
	if inv.DriverVersion != "580.65.06" {
		t.Errorf("driver %q", inv.DriverVersion)
	}
}

func TestNVMLErrors(t *testing.T) {
	cases := []struct {
		name        string
		break_      func(s *dgxa100.Server)
		unavailable bool
		ret         nvml.Return
		msg         string
	}{
		{"library not found", func(s *dgxa100.Server) {
			s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
		}, true, nvml.ERROR_LIBRARY_NOT_FOUND, "init"},
		{"driver not loaded", func(s *dgxa100.Server) {
			s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
		}, true, nvml.ERROR_DRIVER_NOT_LOADED, "init"},
		{"count", func(s *dgxa100.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}, false, nvml.ERROR_UNKNOWN, "device count"},
		{"uuid of device 3", func(s *dgxa100.Server) {
			s.Devices[3].(*server.Device).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
		}, false, nvml.ERROR_GPU_IS_LOST, "device 3 UUID"},
		{"memory of device 5", func(s *dgxa100.Server) {
			s.Devices[5].(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NO_PERMISSION }
		}, false, nvml.ERROR_NO_PERMISSION, "device 5 memory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := dgxa100.New()
			c.break_(s)
			_, err := NewNVML(withNVMLLib(s)).Discover(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrNVMLUnavailable) != c.unavailable {
				t.Errorf("%v: ErrNVMLUnavailable %v, want %v", err, !c.unavailable, c.unavailable)
			}
			if !errors.Is(err, c.ret) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%v: want %v and %q", err, c.ret, c.msg)
			}
		})
	}
}

func TestBusID(t *testing.T) {
	cases := map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"00000001:01:00.0": "0001:01:00.0",
		"0000:41:00.0":     "0000:41:00.0",
		"":                 "",
	}
	for in, want := range cases {
		raw := make([]int8, 32)
		for i, c := range in {
			raw[i] = int8(c)
		}
		if got := busID(raw); got != want {
			t.Errorf("busID(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without libnvidia-ml.so.1 on this host, the real library reports NVML
// unavailable rather than failing discovery.
func TestNVMLRealLibraryAbsent(t *testing.T) {
	inv, err := NewNVML().Discover(context.Background())
	if err == nil {
		t.Skipf("libnvidia-ml.so.1 loads here (%d GPUs): nothing to check", len(inv.GPUs))
	}
	if !errors.Is(err, ErrNVMLUnavailable) {
		t.Errorf("%v, want ErrNVMLUnavailable", err)
	}
}
