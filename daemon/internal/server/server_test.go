package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/instance"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// fakeService records the calls it gets and answers with err when set.
type fakeService struct {
	mu     sync.Mutex
	calls  []string
	err    error
	health v1.Health
}

func (f *fakeService) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.err
}

func (f *fakeService) Version(context.Context) (v1.Version, error) {
	return v1.Version{Daemon: "test", API: v1.APIVersion}, f.record("Version")
}

func (f *fakeService) Health(context.Context) v1.Health {
	_ = f.record("Health")
	return f.health
}

func (f *fakeService) GPUs(context.Context) ([]v1.GPU, error) {
	return nil, f.record("GPUs")
}

func (f *fakeService) ListInstances(_ context.Context, c string) ([]v1.Instance, error) {
	return []v1.Instance{{Name: "a", ContainerID: c}}, f.record("List %q", c)
}

func (f *fakeService) GetInstance(_ context.Context, name string) (v1.Instance, error) {
	return v1.Instance{Name: name}, f.record("Get %s", name)
}

func (f *fakeService) CreateInstance(_ context.Context, req v1.CreateRequest) (v1.Instance, error) {
	name := req.Name
	if name == "" {
		name = "c-" + req.ContainerID
	}
	return v1.Instance{Name: name, ContainerID: req.ContainerID, Memory: req.Memory},
		f.record("Create %s %s %v %d %d %q", req.ContainerID, req.Cgroup, req.GPUs, req.Memory, req.Weight, req.Placement)
}

func (f *fakeService) ResizeInstance(_ context.Context, name string, req v1.ResizeRequest) (v1.Instance, error) {
	m, wt := "-", "-"
	if req.Memory != nil {
		m = fmt.Sprint(*req.Memory)
	}
	if req.Weight != nil {
		wt = fmt.Sprint(*req.Weight)
	}
	return v1.Instance{Name: name}, f.record("Resize %s %s %s", name, m, wt)
}

func (f *fakeService) DestroyInstance(_ context.Context, name string, force bool) error {
	return f.record("Destroy %s %v", name, force)
}

func (f *fakeService) Inspect(context.Context) (v1.Inspect, error) {
	return v1.Inspect{Node: "n"}, f.record("Inspect")
}

func (f *fakeService) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

var _ Service = (*fakeService)(nil)

func rootPeer(net.Conn) (Peer, error) { return Peer{PID: 1, UID: 0, GID: 0}, nil }

// serve runs s on a Unix socket in a temporary directory and returns a
// client that dials it.
func serve(t *testing.T, s *Server) *http.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return unixClient(sock)
}

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

type response struct {
	status int
	header http.Header
	body   []byte
	apiErr v1.Error
}

func do(t *testing.T, c *http.Client, method, path, ctype string, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, "http://cgpud"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.StatusCode >= 400 && path != "/v1/health" {
		if err := json.Unmarshal(b, &r.apiErr); err != nil {
			t.Fatalf("%s %s: %d with a body that is not a v1.Error: %q", method, path, resp.StatusCode, b)
		}
		if r.apiErr.Code == "" || r.apiErr.Message == "" {
			t.Fatalf("%s %s: %d with an empty error: %q", method, path, resp.StatusCode, b)
		}
	}
	return r
}

const okCreate = `{"container_id":"abc","cgroup":"/kubepods/pod1/abc","memory":1073741824}`

func TestRoutes(t *testing.T) {
	svc := &fakeService{health: v1.Health{Status: "ok"}}
	c := serve(t, New(svc, WithPeerResolver(rootPeer)))
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string // error code, when status >= 400
		call                     string // what the service saw; "" = not called
		want                     string // a substring of the body
	}{
		{"version", "GET", "/v1/version", "", 200, "", "Version", `"api":"v1"`},
		{"health", "GET", "/v1/health", "", 200, "", "Health", `"status":"ok"`},
		{"gpus empty is a list", "GET", "/v1/gpus", "", 200, "", "GPUs", "[]"},
		{"list", "GET", "/v1/instances", "", 200, "", `List ""`, `"name":"a"`},
		{"list by container", "GET", "/v1/instances?container=abc", "", 200, "", `List "abc"`, `"container_id":"abc"`},
		{"list unknown query", "GET", "/v1/instances?containr=abc", "", 400, "bad_request", "", "containr"},
		{"create", "POST", "/v1/instances", okCreate, 201, "", `Create abc /kubepods/pod1/abc [] 1073741824 0 ""`, `"name":"c-abc"`},
		{"create full", "POST", "/v1/instances", `{"name":"n.1","container_id":"abc","cgroup":"/sys/fs/cgroup/x","gpus":["0","GPU-1"],"memory":5,"weight":2,"placement":"spread"}`,
			201, "", `Create abc /sys/fs/cgroup/x [0 GPU-1] 5 2 "spread"`, `"name":"n.1"`},
		{"get", "GET", "/v1/instances/n1", "", 200, "", "Get n1", `"name":"n1"`},
		{"get bad name", "GET", "/v1/instances/a%20b", "", 400, "bad_request", "", "instance name"},
		{"resize memory", "PATCH", "/v1/instances/n1", `{"memory":1024}`, 200, "", "Resize n1 1024 -", ""},
		{"resize weight", "PATCH", "/v1/instances/n1", `{"weight":3}`, 200, "", "Resize n1 - 3", ""},
		{"resize nothing", "PATCH", "/v1/instances/n1", `{}`, 400, "bad_request", "", "nothing to change"},
		{"resize memory 0", "PATCH", "/v1/instances/n1", `{"memory":0}`, 400, "bad_request", "", "memory"},
		{"destroy", "DELETE", "/v1/instances/n1", "", 204, "", "Destroy n1 false", ""},
		{"destroy force", "DELETE", "/v1/instances/n1?force=1", "", 204, "", "Destroy n1 true", ""},
		{"destroy force junk", "DELETE", "/v1/instances/n1?force=yes", "", 400, "bad_request", "", "force"},
		{"inspect", "GET", "/v1/inspect", "", 200, "", "Inspect", `"node":"n"`},
		{"unknown path", "GET", "/v2/version", "", 404, "not_found", "", "/v2/version"},
		{"wrong method", "PUT", "/v1/instances", "", 405, "bad_request", "", "allowed: "},
		{"wrong method on name", "POST", "/v1/instances/n1", "", 405, "bad_request", "", "method not allowed"},
		{"metrics", "GET", "/metrics", "", 200, "", "", "cgpu_api_requests_total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.calls = nil
			svc.mu.Unlock()
			var body io.Reader
			ct := ""
			if tt.body != "" {
				body, ct = strings.NewReader(tt.body), "application/json"
			}
			r := do(t, c, tt.method, tt.path, ct, body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if r.apiErr.Code != tt.code {
				t.Errorf("error code %q, want %q", r.apiErr.Code, tt.code)
			}
			if got := svc.lastCall(); got != tt.call {
				t.Errorf("service saw %q, want %q", got, tt.call)
			}
			if !bytes.Contains(r.body, []byte(tt.want)) {
				t.Errorf("body %s lacks %q", r.body, tt.want)
			}
		})
	}
}

func TestMethodNotAllowedHeader(t *testing.T) {
	c := serve(t, New(&fakeService{}, WithPeerResolver(rootPeer)))
	r := do(t, c, "DELETE", "/v1/instances", "", nil)
	if r.status != 405 {
		t.Fatalf("status %d", r.status)
	}
	allow := r.header.Get("Allow")
	for _, m := range []string{"GET", "HEAD", "POST"} {
		if !strings.Contains(allow, m) {
			t.Errorf("Allow %q lacks %s", allow, m)
		}
	}
}

func TestBadBodies(t *testing.T) {
	svc := &fakeService{}
	c := serve(t, New(svc, WithPeerResolver(rootPeer)))
	huge := `{"container_id":"` + strings.Repeat("a", MaxBody) + `","cgroup":"/x","memory":1}`
	tests := []struct {
		name, ctype, body string
		status            int
		code, want        string
	}{
		{"empty", "application/json", "", 400, "bad_request", "empty"},
		{"malformed", "application/json", `{"container_id":`, 400, "bad_request", "truncated"},
		{"syntax", "application/json", `{"container_id" "x"}`, 400, "bad_request", "malformed JSON"},
		{"unknown field", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"memroy":2}`, 400, "bad_request", `unknown field "memroy"`},
		{"two values", "application/json", okCreate + okCreate, 400, "bad_request", "more than one"},
		{"trailing junk", "application/json", okCreate + "x", 400, "bad_request", "trailing"},
		{"wrong type", "application/json", `{"container_id":"a","cgroup":"/x","memory":"1G"}`, 400, "bad_request", `field "memory"`},
		{"negative memory", "application/json", `{"container_id":"a","cgroup":"/x","memory":-1}`, 400, "bad_request", "memory"},
		{"array", "application/json", `[1]`, 400, "bad_request", "body"},
		{"oversized", "application/json", huge, 413, "too_large", "larger than"},
		{"form", "application/x-www-form-urlencoded", okCreate, 415, "bad_request", "application/json"},
		{"text", "text/plain", okCreate, 415, "bad_request", "text/plain"},
		{"json with charset", "application/json; charset=utf-8", okCreate, 201, "", ""},
		{"no content type", "", okCreate, 201, "", ""},
		{"memory 0", "application/json", `{"container_id":"a","cgroup":"/x"}`, 400, "bad_request", "memory: 0"},
		{"memory in GiB by mistake is fine, absurd bytes are not", "application/json", `{"container_id":"a","cgroup":"/x","memory":18446744073709551615}`, 400, "bad_request", "bytes, not GiB"},
		{"weight", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"weight":100000}`, 400, "bad_request", "weight"},
		{"no container", "application/json", `{"cgroup":"/x","memory":1}`, 400, "bad_request", "container_id: missing"},
		{"container slash", "application/json", `{"container_id":"a/b","cgroup":"/x","memory":1}`, 400, "bad_request", "container_id"},
		{"relative cgroup", "application/json", `{"container_id":"a","cgroup":"x","memory":1}`, 400, "bad_request", "absolute"},
		{"dotdot cgroup", "application/json", `{"container_id":"a","cgroup":"/x/../../etc","memory":1}`, 400, "bad_request", ".."},
		{"memory the kernel takes", "application/json", `{"container_id":"a","cgroup":"/x","memory":281474976710656}`, 201, "", ""},
		{"memory one byte above the kernel's bound", "application/json", `{"container_id":"a","cgroup":"/x","memory":281474976710657}`, 400, "bad_request", "above the most a slice takes"},
		{"bad name", "application/json", `{"name":"a/b","container_id":"a","cgroup":"/x","memory":1}`, 400, "bad_request", "instance name"},
		{"dot name", "application/json", `{"name":"..","container_id":"a","cgroup":"/x","memory":1}`, 400, "bad_request", "reserved"},
		{"gpu twice", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"gpus":["0","0"]}`, 400, "bad_request", "twice"},
		{"empty gpu", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"gpus":[""]}`, 400, "bad_request", "gpus"},
		{"placement", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"placement":"random"}`, 400, "bad_request", "binpack or spread"},
		// encoding/json alone takes these: keys are matched without case and
		// the last of two equal keys wins.
		{"key in the field's case", "application/json", `{"name":"n","container_id":"a","cgroup":"/x","memory":1}`, 201, "", ""},
		{"key in another case", "application/json", `{"Name":"n","container_id":"a","cgroup":"/x","memory":1}`, 400, "bad_request", `key "Name": keys are case-sensitive, the field is "name"`},
		{"key upper case", "application/json", `{"container_id":"a","cgroup":"/x","MEMORY":1}`, 400, "bad_request", `key "MEMORY": keys are case-sensitive`},
		{"key with a long s (folds to s)", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"gpu\u017f":["0"]}`, 400, "bad_request", "case-sensitive"},
		{"key twice, different values", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"memory":281474976710656}`, 400, "bad_request", `key "memory" given twice`},
		{"key twice, same value", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"memory":1}`, 400, "bad_request", `key "memory" given twice`},
		{"key twice, one escaped", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"mem\u006fry":2}`, 400, "bad_request", `key "memory" given twice`},
		{"key twice in two cases", "application/json", `{"container_id":"a","cgroup":"/x","memory":1,"Memory":2}`, 400, "bad_request", `key "Memory": keys are case-sensitive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.calls = nil
			svc.mu.Unlock()
			r := do(t, c, "POST", "/v1/instances", tt.ctype, strings.NewReader(tt.body))
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %.300s", r.status, tt.status, r.body)
			}
			if r.apiErr.Code != tt.code {
				t.Errorf("code %q, want %q", r.apiErr.Code, tt.code)
			}
			if !strings.Contains(r.apiErr.Message, tt.want) {
				t.Errorf("message %q lacks %q", r.apiErr.Message, tt.want)
			}
			if tt.status >= 400 {
				if !strings.HasPrefix(r.apiErr.Message, v1.ErrorPrefixCreate) {
					t.Errorf("a failed create's message %q lacks ACK's prefix", r.apiErr.Message)
				}
				if call := svc.lastCall(); call != "" {
					t.Errorf("a bad request reached the service: %s", call)
				}
			}
		})
	}
}

// TestResizeStrictKeys: PATCH bodies get the same strict keys as POST.
func TestResizeStrictKeys(t *testing.T) {
	svc := &fakeService{}
	c := serve(t, New(svc, WithPeerResolver(rootPeer)))
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"field's case", `{"memory":1}`, 200, ""},
		{"other case", `{"Memory":1}`, 400, `key "Memory": keys are case-sensitive, the field is "memory"`},
		{"twice", `{"weight":1,"weight":20}`, 400, `key "weight" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.calls = nil
			svc.mu.Unlock()
			r := do(t, c, "PATCH", "/v1/instances/a", "application/json", strings.NewReader(tt.body))
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %.300s", r.status, tt.status, r.body)
			}
			if !strings.Contains(r.apiErr.Message, tt.want) {
				t.Errorf("message %q lacks %q", r.apiErr.Message, tt.want)
			}
			if call := svc.lastCall(); tt.status >= 400 && call != "" {
				t.Errorf("a bad request reached the service: %s", call)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("gpu 7: %w", instance.ErrInvalid), 400, "bad_request"},
		{fmt.Errorf("x: %w", instance.ErrNotFound), 404, "not_found"},
		{fmt.Errorf("x: %w", instance.ErrConflict), 409, "conflict"},
		{fmt.Errorf("GPU 0 has 20 instances, the most a GPU takes: %w", instance.ErrNoSpace), 409, "no_space"},
		{fmt.Errorf("x: %w", instance.ErrBusy), 409, "busy"},
		{fmt.Errorf("x: %w", instance.ErrUnavailable), 503, "unavailable"},
		{errors.New("disk on fire"), 500, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			svc := &fakeService{err: tt.err}
			c := serve(t, New(svc, WithPeerResolver(rootPeer)))
			r := do(t, c, "POST", "/v1/instances", "application/json", strings.NewReader(okCreate))
			if r.status != tt.status || r.apiErr.Code != tt.code {
				t.Fatalf("create: %d %q, want %d %q", r.status, r.apiErr.Code, tt.status, tt.code)
			}
			if want := v1.ErrorPrefixCreate + tt.err.Error(); r.apiErr.Message != want {
				t.Errorf("message %q, want %q", r.apiErr.Message, want)
			}
			r = do(t, c, "DELETE", "/v1/instances/x", "", nil)
			if r.status != tt.status || r.apiErr.Code != tt.code || r.apiErr.Message != tt.err.Error() {
				t.Errorf("destroy: %d %q %q", r.status, r.apiErr.Code, r.apiErr.Message)
			}
		})
	}
}

func TestPrefixNotDoubled(t *testing.T) {
	err := fmt.Errorf("%sGPU 0 has 20 instances: %w", v1.ErrorPrefixCreate, instance.ErrNoSpace)
	c := serve(t, New(&fakeService{err: err}, WithPeerResolver(rootPeer)))
	r := do(t, c, "POST", "/v1/instances", "application/json", strings.NewReader(okCreate))
	if r.apiErr.Message != err.Error() {
		t.Errorf("message %q, want %q", r.apiErr.Message, err.Error())
	}
}

func TestHealthDegraded(t *testing.T) {
	svc := &fakeService{health: v1.Health{Status: "degraded", Checks: []v1.Check{{Name: "module", Message: "not loaded"}}}}
	c := serve(t, New(svc, WithPeerResolver(rootPeer)))
	r := do(t, c, "GET", "/v1/health", "", nil)
	if r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	var h v1.Health
	if err := json.Unmarshal(r.body, &h); err != nil || h.Status != "degraded" || len(h.Checks) != 1 {
		t.Errorf("body %s (%v)", r.body, err)
	}
}

func TestAuthorization(t *testing.T) {
	const readGID, writeGID = 500, 501
	access := Access{ReadGID: readGID, WriteGID: writeGID, WriteGroup: "cgpu-admin"}
	tests := []struct {
		name        string
		peer        Peer
		peerErr     error
		read, write int
	}{
		{"root", Peer{UID: 0, GID: 0}, nil, 200, 201},
		{"stranger", Peer{UID: 1000, GID: 1000, Groups: []uint32{27, 100}}, nil, 403, 403},
		{"reader by gid", Peer{UID: 1000, GID: readGID}, nil, 200, 403},
		{"reader by supplementary group", Peer{UID: 1000, GID: 1000, Groups: []uint32{readGID}}, nil, 200, 403},
		{"writer", Peer{UID: 1000, GID: 1000, Groups: []uint32{writeGID}}, nil, 200, 201},
		{"unknown peer", Peer{}, errors.New("SO_PEERCRED: bad file descriptor"), 403, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &fakeService{}
			log, hook := test.NewNullLogger()
			resolve := func(net.Conn) (Peer, error) { return tt.peer, tt.peerErr }
			c := serve(t, New(svc, WithPeerResolver(resolve), WithAccess(access), WithLogger(log)))
			if r := do(t, c, "GET", "/v1/instances", "", nil); r.status != tt.read {
				t.Errorf("GET: %d, want %d", r.status, tt.read)
			} else if r.status == 403 && r.apiErr.Code != "forbidden" {
				t.Errorf("GET: code %q", r.apiErr.Code)
			}
			if r := do(t, c, "GET", "/metrics", "", nil); r.status != tt.read {
				t.Errorf("GET /metrics: %d, want %d", r.status, tt.read)
			}
			r := do(t, c, "POST", "/v1/instances", "application/json", strings.NewReader(okCreate))
			if r.status != tt.write {
				t.Errorf("POST: %d, want %d (%s)", r.status, tt.write, r.body)
			}
			if tt.write == 403 && tt.peerErr == nil && !strings.Contains(r.apiErr.Message, "root or group cgpu-admin (gid 501) may") {
				t.Errorf("a refusal that does not say who may: %q", r.apiErr.Message)
			}
			if tt.write == 403 {
				for _, call := range svc.calls {
					if strings.HasPrefix(call, "Create") {
						t.Errorf("a refused create reached the service")
					}
				}
				if len(hook.AllEntries()) == 0 {
					t.Errorf("a refusal was not logged")
				}
			}
			for _, m := range []string{"PATCH", "DELETE"} {
				if tt.write == 403 {
					if r := do(t, c, m, "/v1/instances/x", "application/json", strings.NewReader(`{"memory":1}`)); r.status != 403 {
						t.Errorf("%s: %d, want 403", m, r.status)
					}
				}
			}
		})
	}
}

type constCollector struct{ desc *prometheus.Desc }

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 42)
}

func TestMetricsCollectors(t *testing.T) {
	col := constCollector{prometheus.NewDesc("cgpu_test_value", "A test value.", nil, nil)}
	s := New(&fakeService{}, WithPeerResolver(rootPeer), WithCollectors(col))
	c := serve(t, s)
	do(t, c, "GET", "/v1/version", "", nil)
	r := do(t, c, "GET", "/metrics", "", nil)
	for _, want := range []string{"cgpu_test_value 42", `cgpu_api_requests_total{code="200",route="GET /v1/version"} 1`} {
		if !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("/metrics lacks %q:\n%s", want, r.body)
		}
	}
}

func TestMain(m *testing.M) {
	logrus.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// The socket's /metrics, the API's own metrics included, passes promtool.
func TestMetricsLint(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	col := constCollector{prometheus.NewDesc("cgpu_test_value", "A test value.", nil, nil)}
	c := serve(t, New(&fakeService{}, WithPeerResolver(rootPeer), WithCollectors(col)))
	do(t, c, "GET", "/v1/version", "", nil)
	do(t, c, "GET", "/v1/nope", "", nil)
	r := do(t, c, "GET", "/metrics", "", nil)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(r.body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
