package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cgpu-dev/cgpu/daemon/internal/nvrm"
)

const fixtureProc = "../nvrm/testdata/proc"

func TestProcfsMapsEveryField(t *testing.T) {
	p := NewProcfs(WithProcRoot("/fixture/proc"), WithDevDir("/fixture/dev"))
	p.discover = func(procRoot, devDir string) (string, []nvrm.GPU, error) {
		if procRoot != "/fixture/proc" || devDir != "/fixture/dev" {
			t.Errorf("discover(%q, %q): the options did not reach nvrm", procRoot, devDir)
		}
		return "595.45.04", []nvrm.GPU{
			{Index: 0, Minor: 1, UUID: "GPU-5b1a7c3e-0f2d-4c6b-9a8e-1d2c3b4a5f60", Name: "NVIDIA A100-SXM4-40GB",
				BusID: "0000:41:00.0", MemoryTotal: 40 << 30, MemoryFree: 39 << 30},
			{Index: 1, Minor: 3, UUID: "GPU-b", Name: "NVIDIA H100", BusID: "0000:81:00.0", MemoryTotal: 80 << 30},
		}, nil
	}
	inv, err := p.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Inventory{DriverVersion: "595.45.04", Source: "procfs", GPUs: []GPU{
		{Index: 0, Minor: 1, UUID: "GPU-5b1a7c3e-0f2d-4c6b-9a8e-1d2c3b4a5f60", Name: "NVIDIA A100-SXM4-40GB", BusID: "0000:41:00.0", MemoryTotal: 40 << 30},
		{Index: 1, Minor: 3, UUID: "GPU-b", Name: "NVIDIA H100", BusID: "0000:81:00.0", MemoryTotal: 80 << 30},
	}}
	if inv.DriverVersion != want.DriverVersion || inv.Source != want.Source || len(inv.GPUs) != 2 ||
		inv.GPUs[0] != want.GPUs[0] || inv.GPUs[1] != want.GPUs[1] {
		t.Errorf("got %+v\nwant %+v", inv, want)
	}
}

func TestProcfsFixtures(t *testing.T) {
	cases := []struct {
		name     string
		procRoot string
		want     error  // errors.Is
		msg      string // in the message
	}{
		// The real nvrm.Discover on internal/nvrm's fixtures: the procfs
		// half reads them, the RM half finds no control node.
		{"no driver", t.TempDir(), nvrm.ErrNoDriver, "discover GPUs through procfs"},
		{"driver files but no nvidiactl", fixtureProc, nil, "nvidiactl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewProcfs(WithProcRoot(c.procRoot), WithDevDir(t.TempDir())).Discover(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%v, want %q in it", err, c.msg)
			}
		})
	}
}

func TestProcfsNegativeMinor(t *testing.T) {
	p := NewProcfs()
	p.discover = func(string, string) (string, []nvrm.GPU, error) {
		return "1.0", []nvrm.GPU{{Minor: -1, BusID: "0000:01:00.0"}}, nil
	}
	if _, err := p.Discover(context.Background()); err == nil {
		t.Error("a negative minor was accepted")
	}
}
