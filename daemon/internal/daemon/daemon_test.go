package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

type fakeManager struct {
	mu           sync.Mutex
	reconciled   int
	running      bool
	stopped      bool
	reconcileErr error
	health       *v1.Health // nil: ok
}

func (m *fakeManager) Version(context.Context) (v1.Version, error) {
	return v1.Version{Daemon: "fake", API: v1.APIVersion}, nil
}
func (m *fakeManager) Health(context.Context) v1.Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.health != nil {
		return *m.health
	}
	return v1.Health{Status: "ok"}
}

func (m *fakeManager) setHealth(h *v1.Health) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health = h
}
func (m *fakeManager) GPUs(context.Context) ([]v1.GPU, error) {
	return []v1.GPU{{Index: 0}}, nil
}
func (m *fakeManager) ListInstances(context.Context, string) ([]v1.Instance, error) {
	return nil, nil
}
func (m *fakeManager) GetInstance(context.Context, string) (v1.Instance, error) {
	return v1.Instance{}, nil
}
func (m *fakeManager) CreateInstance(context.Context, v1.CreateRequest) (v1.Instance, error) {
	return v1.Instance{Name: "x"}, nil
}
func (m *fakeManager) ResizeInstance(context.Context, string, v1.ResizeRequest) (v1.Instance, error) {
	return v1.Instance{}, nil
}
func (m *fakeManager) DestroyInstance(context.Context, string, bool) error { return nil }
func (m *fakeManager) Inspect(context.Context) (v1.Inspect, error)         { return v1.Inspect{}, nil }
func (m *fakeManager) Reconcile(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reconciled++
	return m.reconcileErr
}
func (m *fakeManager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.running = true
	m.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	return ctx.Err()
}

// recorder is the sd_notify socket.
type recorder struct {
	mu     sync.Mutex
	states []string
	onSend func(string)
}

func (r *recorder) notify(state string) (bool, error) {
	if r.onSend != nil {
		r.onSend(state)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, state)
	return true, nil
}

func (r *recorder) has(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.states {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

type harness struct {
	t       *testing.T
	dir     string
	conf    string
	sock    string
	mgr     *fakeManager
	notes   *recorder
	sigs    chan os.Signal
	log     *logrus.Logger
	logBuf  *syncBuffer
	closed  chan struct{}
	d       *Daemon
	done    chan error
	buildFn Builder
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T, conf string) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, sock: filepath.Join(dir, "run", "c.sock"), mgr: &fakeManager{},
		notes: &recorder{}, sigs: make(chan os.Signal, 4), closed: make(chan struct{}), logBuf: &syncBuffer{}}
	h.conf = filepath.Join(dir, "cgpud.toml")
	h.writeConf(fmt.Sprintf("socket = %q\nstate_dir = %q\ncdi_dir = \"\"\n%s", h.sock, filepath.Join(dir, "state"), conf))
	h.log = NewLogger(h.logBuf)
	h.buildFn = func(context.Context, config.Config, *logrus.Logger) (Parts, error) {
		return Parts{Manager: h.mgr, Close: func() error { close(h.closed); return nil }}, nil
	}
	return h
}

func (h *harness) writeConf(doc string) {
	if err := os.WriteFile(h.conf, []byte(doc), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) start(opts ...Option) {
	h.t.Helper()
	l, err := config.Parse("cgpud", []string{"--config", h.conf}, io.Discard)
	if err != nil {
		h.t.Fatal(err)
	}
	mygid := os.Getgid()
	base := []Option{
		WithBuilder(func(ctx context.Context, c config.Config, log *logrus.Logger) (Parts, error) {
			return h.buildFn(ctx, c, log)
		}),
		WithNotifier(h.notes.notify),
		WithWatchdog(func() (time.Duration, error) { return 0, nil }),
		WithSignals(h.sigs),
		WithEnv(func(string) string { return "" }),
		// The test's own group is the read group, so the real SO_PEERCRED
		// path admits this process.
		WithGroupLookup(func(name string) (int, error) {
			if name == "cgpu" || name == "cgpu-admin" {
				return mygid, nil
			}
			return -1, fs.ErrNotExist
		}),
	}
	h.d = New(l, h.log, append(base, opts...)...)
	h.done = make(chan error, 1)
	go func() { h.done <- h.d.Run(context.Background()) }()
}

func (h *harness) waitReady() {
	h.t.Helper()
	select {
	case <-h.d.Ready():
	case err := <-h.done:
		h.t.Fatalf("daemon ended before ready: %v\n%s", err, h.logBuf.String())
	case <-time.After(10 * time.Second):
		h.t.Fatal("not ready after 10 s")
	}
}

func (h *harness) stop(sig os.Signal) error {
	h.t.Helper()
	h.sigs <- sig
	select {
	case err := <-h.done:
		return err
	case <-time.After(15 * time.Second):
		h.t.Fatal("no stop after 15 s")
		return nil
	}
}

func get(t *testing.T, sock, path string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://cgpud" + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLifecycle(t *testing.T) {
	h := newHarness(t, "")
	// READY must come after reconciliation and with the socket answering.
	h.notes.onSend = func(state string) {
		if !strings.HasPrefix(state, "READY=1") || h.notes.has("READY=1") > 0 {
			return
		}
		h.mgr.mu.Lock()
		n := h.mgr.reconciled
		h.mgr.mu.Unlock()
		if n != 1 {
			t.Errorf("READY before reconciliation (%d)", n)
		}
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			t.Errorf("READY before the socket listens: %v", err)
		} else {
			c.Close()
		}
	}
	h.start()
	h.waitReady()
	if code, body := get(t, h.sock, "/v1/version"); code != 200 || !strings.Contains(body, `"daemon":"fake"`) {
		t.Errorf("version: %d %s", code, body)
	}
	fi, err := os.Stat(h.sock)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket %v %v", fi, err)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if h.notes.has("READY=1") != 1 || h.notes.has("STOPPING=1") != 1 {
		t.Errorf("notifications %q", h.notes.states)
	}
	h.mgr.mu.Lock()
	if !h.mgr.running || !h.mgr.stopped {
		t.Errorf("the container watch did not run and stop: %+v", h.mgr)
	}
	h.mgr.mu.Unlock()
	select {
	case <-h.closed:
	default:
		t.Error("parts not closed")
	}
	if _, err := os.Stat(h.sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestReload(t *testing.T) {
	h := newHarness(t, "log_level = \"info\"\n")
	var got []config.Config
	var mu sync.Mutex
	h.buildFn = func(context.Context, config.Config, *logrus.Logger) (Parts, error) {
		return Parts{Manager: h.mgr, Reload: func(c config.Config) {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
		}}, nil
	}
	h.start()
	h.waitReady()
	if h.log.GetLevel() != logrus.InfoLevel {
		t.Fatalf("level %v", h.log.GetLevel())
	}
	other := filepath.Join(h.dir, "other.sock")
	h.writeConf(fmt.Sprintf("socket = %q\nstate_dir = %q\ncdi_dir = \"\"\nlog_level = \"debug\"\nplacement = \"spread\"\n", other, filepath.Join(h.dir, "state")))
	h.sigs <- syscall.SIGHUP
	deadline := time.Now().Add(5 * time.Second)
	for h.notes.has("RELOADING=1") == 0 || h.notes.has("READY=1") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no reload notifications: %q", h.notes.states)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.log.GetLevel() != logrus.DebugLevel {
		t.Errorf("level after reload %v", h.log.GetLevel())
	}
	mu.Lock()
	if len(got) != 1 || got[0].Placement != "spread" || got[0].Socket != h.sock {
		t.Errorf("reload gave the parts %+v; want placement spread and the running socket", got)
	}
	mu.Unlock()
	if !strings.Contains(h.logBuf.String(), "next restart") || !strings.Contains(h.logBuf.String(), "socket") {
		t.Errorf("no word on the socket needing a restart:\n%s", h.logBuf.String())
	}
	// The old socket still serves.
	if code, _ := get(t, h.sock, "/v1/version"); code != 200 {
		t.Errorf("after reload: %d", code)
	}
	// A broken file keeps the running configuration.
	h.writeConf("log_level = \"loud\"\n")
	h.sigs <- syscall.SIGHUP
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(h.logBuf.String(), "keeping the running configuration") {
		if time.Now().After(deadline) {
			t.Fatalf("a bad reload was not reported:\n%s", h.logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h.log.GetLevel() != logrus.DebugLevel {
		t.Errorf("level after a bad reload %v", h.log.GetLevel())
	}
	if err := h.stop(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}

func TestSocketActivation(t *testing.T) {
	h := newHarness(t, "")
	act := filepath.Join(h.dir, "act.sock")
	ln, err := net.Listen("unix", act)
	if err != nil {
		t.Fatal(err)
	}
	h.start(
		WithEnv(func(k string) string {
			if k == "LISTEN_FDS" {
				return "1"
			}
			return ""
		}),
		WithListeners(func() ([]net.Listener, error) { return []net.Listener{nil, ln}, nil }),
	)
	h.waitReady()
	if code, _ := get(t, act, "/v1/gpus"); code != 200 {
		t.Errorf("activated socket: %d", code)
	}
	if _, err := os.Stat(h.sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a socket of its own was made under activation: %v", err)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileFailureServesDegraded(t *testing.T) {
	h := newHarness(t, "")
	h.mgr.reconcileErr = errors.New("cgpu.ko is not loaded")
	h.start()
	h.waitReady()
	if h.notes.has("READY=1\nSTATUS=degraded: cgpu.ko is not loaded") != 1 {
		t.Errorf("notifications %q", h.notes.states)
	}
	if code, _ := get(t, h.sock, "/v1/version"); code != 200 {
		t.Errorf("version: %d", code)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// A reconciliation that returns no error may still leave the daemon
// degraded (an instance kept without its limit): STATUS= says so from the
// start, with Health's reasons, and follows Health afterwards.
func TestStatusFollowsHealth(t *testing.T) {
	degraded := &v1.Health{Status: "degraded", Checks: []v1.Check{
		{Name: "kernel", OK: true},
		{Name: "instances", Message: "instance a is degraded: GPU 1: kernel instance gone\nand cannot be made again"},
		{Name: "filters", Message: "device filter of cgroup 7: no instance claims it"},
	}}
	const want = "STATUS=degraded: instances: instance a is degraded: GPU 1: kernel instance gone; and cannot be made again; filters: device filter of cgroup 7: no instance claims it"
	h := newHarness(t, "")
	h.mgr.setHealth(degraded)
	h.start(WithWatchdog(func() (time.Duration, error) { return 20 * time.Millisecond, nil }))
	h.waitReady()
	if h.notes.has("READY=1\n"+want) != 1 {
		t.Errorf("notifications %q; want READY with %q", h.notes.states, want)
	}
	wait := func(prefix string, n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for h.notes.has(prefix) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no %d× %q in %q", n, prefix, h.notes.states)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	h.mgr.setHealth(nil)
	wait("STATUS=serving", 1)
	h.mgr.setHealth(degraded)
	wait(want, 1)
	// Told once per change, not at every ping.
	wait("WATCHDOG=1", 6)
	if n := h.notes.has("STATUS="); n != 2 {
		t.Errorf("%d STATUS= notifications after READY, want 2: %q", n, h.notes.states)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func TestWatchdog(t *testing.T) {
	h := newHarness(t, "")
	h.start(WithWatchdog(func() (time.Duration, error) { return 40 * time.Millisecond, nil }))
	h.waitReady()
	deadline := time.Now().Add(5 * time.Second)
	for h.notes.has("WATCHDOG=1") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("pings: %d", h.notes.has("WATCHDOG=1"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	n := h.notes.has("WATCHDOG=1")
	time.Sleep(100 * time.Millisecond)
	if h.notes.has("WATCHDOG=1") != n {
		t.Error("pings after stop")
	}
}

func TestFailuresBeforeReady(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness)
		want  string
	}{
		{"build", func(h *harness) {
			h.buildFn = func(context.Context, config.Config, *logrus.Logger) (Parts, error) {
				return Parts{}, errors.New("no GPUs")
			}
		}, "no GPUs"},
		{"live daemon on the socket", func(h *harness) {
			if err := os.MkdirAll(filepath.Dir(h.sock), 0o755); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("unix", h.sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}, "another daemon"},
		{"bad config", func(h *harness) { h.writeConf("sockett = \"/x\"\n") }, "unknown keys"},
		{"metrics address taken", func(h *harness) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			h.writeConf(fmt.Sprintf("socket = %q\ncdi_dir = \"\"\nmetrics_address = %q\n", h.sock, ln.Addr().String()))
		}, "metrics_address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			tt.setup(h)
			h.start()
			select {
			case err := <-h.done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want %q", err, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still running")
			}
			if h.notes.has("READY=1") != 0 {
				t.Error("READY sent by a daemon that failed to start")
			}
		})
	}
}

func TestMetricsAddress(t *testing.T) {
	h := newHarness(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h.writeConf(fmt.Sprintf("socket = %q\ncdi_dir = \"\"\nmetrics_address = %q\n", h.sock, addr))
	h.buildFn = func(_ context.Context, _ config.Config, log *logrus.Logger) (Parts, error) {
		return Parts{Manager: h.mgr, Collectors: []prometheus.Collector{Collector(h.mgr, log)}}, nil
	}
	h.start()
	h.waitReady()
	get(t, h.sock, "/v1/version")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "cgpu_api_requests_total") || !strings.Contains(string(b), "cgpu_gpu_memory_total_bytes") {
		t.Errorf("TCP /metrics: %d %.300s", resp.StatusCode, b)
	}
	resp, err = http.Get("http://" + addr + "/v1/version")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("the API leaked onto the TCP address: %d", resp.StatusCode)
		}
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func TestLogFormats(t *testing.T) {
	env := func(journal string) func(string) string {
		return func(k string) string {
			if k == "JOURNAL_STREAM" {
				return journal
			}
			return ""
		}
	}
	tests := []struct {
		format, journal string
		want, notWant   string
	}{
		{"auto", "8:1234", "<4>level=warning msg=careful gpu=0\n", "time="},
		{"journald", "", "<4>level=warning msg=careful gpu=0\n", "time="},
		{"auto", "", "level=warning msg=careful gpu=0", "<4>"},
		{"text", "8:1234", "time=", "<4>"},
		{"json", "", `"msg":"careful"`, "<4>"},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.journal, func(t *testing.T) {
			var buf bytes.Buffer
			l := NewLogger(&buf)
			c := config.Default()
			c.LogFormat = tt.format
			ConfigureLogger(l, c, env(tt.journal))
			l.WithField("gpu", 0).Warn("careful")
			if !strings.Contains(buf.String(), tt.want) || strings.Contains(buf.String(), tt.notWant) {
				t.Errorf("%q: want %q, not %q", buf.String(), tt.want, tt.notWant)
			}
		})
	}
}

func TestMainFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := Main([]string{"--version"}, &out, &errb); rc != 0 || !strings.HasPrefix(out.String(), "cgpud ") || !strings.Contains(out.String(), "API v1") {
		t.Errorf("--version: %d %q", rc, out.String())
	}
	out.Reset()
	if rc := Main([]string{"--help"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "--config") && !strings.Contains(out.String(), "-config") {
		t.Errorf("--help: %d %q", rc, out.String())
	}
	errb.Reset()
	if rc := Main([]string{"--bogus"}, &out, &errb); rc != 2 {
		t.Errorf("--bogus: %d", rc)
	}
}

type placementSpy struct {
	fakeManager
	got []string
}

func (p *placementSpy) CreateInstance(_ context.Context, req v1.CreateRequest) (v1.Instance, error) {
	p.got = append(p.got, req.Placement)
	return v1.Instance{}, nil
}

func TestPlacementReload(t *testing.T) {
	spy := &placementSpy{}
	pm := withPlacement(spy, v1.PlacementBinpack)
	ctx := context.Background()
	pm.CreateInstance(ctx, v1.CreateRequest{})
	pm.placement.Store(v1.PlacementSpread)
	pm.CreateInstance(ctx, v1.CreateRequest{})
	pm.CreateInstance(ctx, v1.CreateRequest{Placement: v1.PlacementBinpack})
	pm.CreateInstance(ctx, v1.CreateRequest{GPUs: []string{"0"}})
	if got := strings.Join(spy.got, ","); got != "binpack,spread,binpack," {
		t.Errorf("placements %q", got)
	}
}

// stuckManager's Health never answers: a deadlocked daemon.
type stuckManager struct {
	fakeManager
	stuck chan struct{}
}

func (m *stuckManager) Health(ctx context.Context) v1.Health {
	select {
	case <-m.stuck:
	case <-ctx.Done():
	}
	return v1.Health{Status: "ok"}
}

func TestWatchdogSilentWhenStuck(t *testing.T) {
	h := newHarness(t, "")
	sm := &stuckManager{stuck: make(chan struct{})}
	h.buildFn = func(context.Context, config.Config, *logrus.Logger) (Parts, error) {
		return Parts{Manager: sm}, nil
	}
	h.start(WithWatchdog(func() (time.Duration, error) { return 40 * time.Millisecond, nil }))
	h.waitReady()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(h.logBuf.String(), "did not answer in time") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning:\n%s", h.logBuf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.notes.has("WATCHDOG=1"); n != 0 {
		t.Errorf("%d pings from a stuck daemon", n)
	}
	close(sm.stuck) // it recovers: pings resume
	deadline = time.Now().Add(5 * time.Second)
	for h.notes.has("WATCHDOG=1") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no pings after recovery")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func TestCDISpecAtStart(t *testing.T) {
	h := newHarness(t, "")
	cdi := filepath.Join(h.dir, "cdi")
	h.writeConf(fmt.Sprintf("socket = %q\ncdi_dir = %q\n", h.sock, cdi))
	h.start()
	h.waitReady()
	b, err := os.ReadFile(filepath.Join(cdi, "cgpu.yaml"))
	if err != nil {
		t.Fatalf("no spec: %v\n%s", err, h.logBuf.String())
	}
	for _, want := range []string{"cgpu.io/gpu", "/dev/nvidia0", "createRuntime"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("spec lacks %q:\n%s", want, b)
		}
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
