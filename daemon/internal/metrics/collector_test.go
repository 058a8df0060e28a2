package metrics

import (
	"context"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

type fakeSource struct {
	gpus    []v1.GPU
	insts   []v1.Instance
	health  v1.Health
	gpuErr  error
	instErr error
}

func (f *fakeSource) GPUs(context.Context) ([]v1.GPU, error) { return f.gpus, f.gpuErr }
func (f *fakeSource) Instances(context.Context) ([]v1.Instance, error) {
	return f.insts, f.instErr
}
func (f *fakeSource) Health(context.Context) v1.Health { return f.health }

const gib = 1 << 30

// node: two GPUs; "web" has 4 GiB on each, "batch" 6 GiB on GPU 1.
func node() *fakeSource {
	return &fakeSource{
		gpus: []v1.GPU{
			{Index: 0, Minor: 0, UUID: "GPU-00000000-1111-2222-3333-444444444444", MemoryTotal: 16 * gib,
				MemoryAllocated: 4 * gib, MemoryUsed: 3 * gib, Instances: 1, MaxInstances: 20},
			{Index: 1, Minor: 1, UUID: "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", MemoryTotal: 16 * gib,
				MemoryAllocated: 10 * gib, MemoryUsed: 5 * gib, Instances: 2, MaxInstances: 20},
		},
		insts: []v1.Instance{
			{Name: "web", ContainerID: "c0ffee", Memory: 4 * gib, Weight: 1, GPUs: []v1.InstanceGPU{
				{Index: 0, Used: 3 * gib, Peak: 4 * gib, Allocs: 120, RefusedAllocs: 3, RefusedManaged: 1, Processes: 2},
				{Index: 1, Used: 1 * gib, Peak: 1 * gib, Allocs: 7, Processes: 1},
			}},
			{Name: "batch", ContainerID: "beef", Memory: 6 * gib, Weight: 2, GPUs: []v1.InstanceGPU{
				{Index: 1, Used: 4 * gib, Peak: 6 * gib, Allocs: 9000, RefusedAllocs: 42, Processes: 4},
			}},
		},
		health: v1.Health{Status: "degraded", Checks: []v1.Check{
			{Name: "kernel", OK: true}, {Name: "gpus", OK: true}, {Name: "state", OK: false, Message: "fsync failed"},
		}},
	}
}

// stepClock advances 25 ms at each reading: every source "takes" 25 ms.
func stepClock() func() time.Time {
	t := time.Unix(1700000000, 0)
	return func() time.Time { t = t.Add(25 * time.Millisecond); return t }
}

// exposition is what GET /metrics serves for c, in the text format.
func exposition(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("exposition differs from %s (go test -update rewrites it):\n%s", p, got)
	}
}

func TestExpositionGolden(t *testing.T) {
	cases := []struct {
		name   string
		src    func() *fakeSource
		golden string
	}{
		{"node", node, "node.golden"},
		{"sources failing", func() *fakeSource {
			s := node()
			s.gpuErr = errors.New("discovery failed")
			s.instErr = context.DeadlineExceeded
			s.health = v1.Health{Status: "ok", Checks: []v1.Check{{Name: "kernel", OK: true}}}
			return s
		}, "failing.golden"},
		{"empty node", func() *fakeSource { return &fakeSource{health: v1.Health{Status: "ok"}} }, "empty.golden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			col := New(c.src(), WithClock(stepClock()))
			golden(t, c.golden, exposition(t, col))
			// The same file through client_golang's own comparison, which
			// parses both sides.
			f, err := os.Open(filepath.Join("testdata", c.golden))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := testutil.CollectAndCompare(New(c.src(), WithClock(stepClock())), f); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(New(node()))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// promtool is what operators run; Debian ships it in the prometheus package.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	for _, name := range []string{"node.golden", "failing.golden", "empty.golden"} {
		f, err := os.Open(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = f
		out, err := cmd.CombinedOutput()
		f.Close()
		if err != nil {
			t.Errorf("promtool check metrics < %s: %v\n%s", name, err, out)
		}
	}
}

func TestScrapeTimeout(t *testing.T) {
	src := &slowSource{fakeSource: node()}
	col := New(src, WithTimeout(20*time.Millisecond))
	text := exposition(t, col)
	if !strings.Contains(text, `cgpu_scrape_success{source="gpus"} 0`) {
		t.Errorf("a source that outlived the timeout is not reported failed:\n%s", text)
	}
	if strings.Contains(text, "cgpu_gpu_memory_total_bytes{") {
		t.Errorf("metrics of a failed source were exported")
	}
}

type slowSource struct{ *fakeSource }

func (s *slowSource) GPUs(ctx context.Context) ([]v1.GPU, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
