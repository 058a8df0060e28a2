package gpu

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cgpu-dev/cgpu/daemon/internal/nvrm"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

type stubDiscoverer struct {
	inv   Inventory
	err   error
	calls int
}

func (s *stubDiscoverer) Discover(ctx context.Context) (Inventory, error) {
	s.calls++
	return s.inv, s.err
}

func TestAutoChoosesSource(t *testing.T) {
	nvmlInv := Inventory{Source: "nvml", DriverVersion: "550.54.15", GPUs: []GPU{{UUID: "GPU-n"}}}
	procInv := Inventory{Source: "procfs", DriverVersion: "595.45.04", GPUs: []GPU{{UUID: "GPU-p"}, {UUID: "GPU-q"}}}
	boom := errors.New("NVML device 2 UUID: GPU is lost")
	cases := []struct {
		name       string
		nvml       *stubDiscoverer // nil: WithoutNVML
		procfs     *stubDiscoverer
		want       string // source, "" for an error
		wantErr    error
		procCalls  int
		logNVMLWhy string
	}{
		{"nvml works", &stubDiscoverer{inv: nvmlInv}, &stubDiscoverer{inv: procInv}, "nvml", nil, 0, ""},
		{"nvml unavailable: procfs", &stubDiscoverer{err: fmt.Errorf("%w: no libnvidia-ml.so.1", ErrNVMLUnavailable)},
			&stubDiscoverer{inv: procInv}, "procfs", nil, 1, "NVML unavailable: no libnvidia-ml.so.1"},
		{"nvml fails otherwise: no fallback", &stubDiscoverer{err: boom}, &stubDiscoverer{inv: procInv}, "", boom, 0, ""},
		{"nvml disabled", nil, &stubDiscoverer{inv: procInv}, "procfs", nil, 1, "NVML disabled"},
		{"both fail", &stubDiscoverer{err: ErrNVMLUnavailable}, &stubDiscoverer{err: boom}, "", boom, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			a := &Auto{procfs: c.procfs, log: log}
			if c.nvml != nil {
				a.nvml = c.nvml
			}
			inv, err := a.Discover(context.Background())
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
			} else if err != nil || inv.Source != c.want {
				t.Fatalf("source %q err %v, want %q", inv.Source, err, c.want)
			}
			if c.procfs.calls != c.procCalls {
				t.Errorf("procfs called %d times, want %d", c.procfs.calls, c.procCalls)
			}
			if c.want == "" {
				return
			}
			e := hook.LastEntry()
			if e == nil || e.Level != logrus.InfoLevel || e.Data["source"] != c.want {
				t.Fatalf("log entry %+v, want info with source=%s", e, c.want)
			}
			if why, _ := e.Data["nvml"].(string); why != c.logNVMLWhy {
				t.Errorf("logged nvml=%q, want %q", why, c.logNVMLWhy)
			}
		})
	}
}

func TestAutoLogsAtInfoOnlyWhenTheSourceChanges(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a := &Auto{procfs: &stubDiscoverer{inv: Inventory{Source: "procfs"}}, log: log}
	for range 3 {
		if _, err := a.Discover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	levels := []logrus.Level{}
	for _, e := range hook.AllEntries() {
		levels = append(levels, e.Level)
	}
	if fmt.Sprint(levels) != fmt.Sprint([]logrus.Level{logrus.InfoLevel, logrus.DebugLevel, logrus.DebugLevel}) {
		t.Errorf("levels %v", levels)
	}
}

// New on this host (no libnvidia-ml.so.1, no driver under the fixture
// root) falls through NVML to procfs and reports procfs's error.
func TestNewFallsBackToProcfs(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	a := New(WithLogger(log), WithProcRoot(t.TempDir()), WithDevDir(t.TempDir()))
	inv, err := a.Discover(context.Background())
	if err == nil {
		t.Skipf("NVML works on this host (%d GPUs)", len(inv.GPUs))
	}
	if !errors.Is(err, nvrm.ErrNoDriver) {
		t.Errorf("%v, want the procfs error (no driver)", err)
	}
	if len(hook.AllEntries()) != 0 {
		t.Errorf("logged %d entries for a failed discovery", len(hook.AllEntries()))
	}
}
