package v1

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// shortSocket returns a socket path short enough for sun_path (108 bytes),
// which t.TempDir() under a long test name may not be.
func shortSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cgpuv1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// seen is what the fake daemon saw of the last request.
type seen struct {
	mu     sync.Mutex
	method string
	uri    string
	ctype  string
	body   []byte
}

func (s *seen) get() (string, string, string, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.uri, s.ctype, s.body
}

// fakeDaemon serves h on a Unix socket and returns a client of it.
func fakeDaemon(t *testing.T, h http.HandlerFunc, opts ...ClientOption) (*Client, *seen) {
	t.Helper()
	sock := shortSocket(t)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	sn := &seen{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sn.mu.Lock()
		sn.method, sn.uri, sn.ctype, sn.body = r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), b
		sn.mu.Unlock()
		h(w, r)
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient(sock, opts...)
	t.Cleanup(c.Close)
	return c, sn
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func TestClientRequests(t *testing.T) {
	inst := Instance{Name: "c1", ContainerID: "abc", Memory: 4 << 30, State: StateReady,
		GPUs: []InstanceGPU{{Index: 0, UUID: "GPU-1", Used: 1 << 30}}}
	mem := uint64(8 << 30)
	tests := []struct {
		name       string
		call       func(context.Context, *Client) (any, error)
		status     int
		reply      any
		wantMethod string
		wantURI    string
		wantBody   string
		want       any
	}{
		{
			name:       "version",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.Version(ctx) },
			status:     200,
			reply:      Version{Daemon: "1.2", API: "v1", Module: &Module{Version: "0.3", MaxInst: 20}, Driver: Driver{Version: "550.54", Source: "procfs"}},
			wantMethod: "GET", wantURI: "/v1/version",
			want: Version{Daemon: "1.2", API: "v1", Module: &Module{Version: "0.3", MaxInst: 20}, Driver: Driver{Version: "550.54", Source: "procfs"}},
		},
		{
			name:       "gpus",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.GPUs(ctx) },
			status:     200,
			reply:      []GPU{{Index: 0, MemoryTotal: 16 << 30}, {Index: 1, MemoryTotal: 16 << 30}},
			wantMethod: "GET", wantURI: "/v1/gpus",
			want: []GPU{{Index: 0, MemoryTotal: 16 << 30}, {Index: 1, MemoryTotal: 16 << 30}},
		},
		{
			name:       "list all",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.ListInstances(ctx, "") },
			status:     200,
			reply:      []Instance{inst},
			wantMethod: "GET", wantURI: "/v1/instances",
			want: []Instance{inst},
		},
		{
			name:       "list by container",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.ListInstances(ctx, "abc def") },
			status:     200,
			reply:      []Instance{},
			wantMethod: "GET", wantURI: "/v1/instances?container=abc+def",
			want: []Instance{},
		},
		{
			name:       "get escapes the name",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.GetInstance(ctx, "a/b") },
			status:     200,
			reply:      inst,
			wantMethod: "GET", wantURI: "/v1/instances/a%2Fb",
			want: inst,
		},
		{
			name: "create",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.CreateInstance(ctx, CreateRequest{ContainerID: "abc", Cgroup: "/x", GPUs: []string{"0"}, Memory: 4 << 30})
			},
			status:     201,
			reply:      inst,
			wantMethod: "POST", wantURI: "/v1/instances",
			wantBody: `{"container_id":"abc","cgroup":"/x","gpus":["0"],"memory":4294967296}`,
			want:     inst,
		},
		{
			name: "resize",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.ResizeInstance(ctx, "c1", ResizeRequest{Memory: &mem})
			},
			status:     200,
			reply:      inst,
			wantMethod: "PATCH", wantURI: "/v1/instances/c1",
			wantBody: `{"memory":8589934592}`,
			want:     inst,
		},
		{
			name: "destroy force",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DestroyInstance(ctx, "c1", true)
			},
			status:     204,
			wantMethod: "DELETE", wantURI: "/v1/instances/c1?force=1",
		},
		{
			name: "destroy",
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DestroyInstance(ctx, "c1", false)
			},
			status:     204,
			wantMethod: "DELETE", wantURI: "/v1/instances/c1",
		},
		{
			name:       "inspect",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.Inspect(ctx) },
			status:     200,
			reply:      Inspect{Node: "n", Address: "192.0.2.1", GPUs: []InspectGPU{{Index: 0, Allocated: 1, Total: 2}}},
			wantMethod: "GET", wantURI: "/v1/inspect",
			want: Inspect{Node: "n", Address: "192.0.2.1", GPUs: []InspectGPU{{Index: 0, Allocated: 1, Total: 2}}},
		},
		{
			name:       "health ok",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.Health(ctx) },
			status:     200,
			reply:      Health{Status: "ok", Checks: []Check{{Name: "module", OK: true}}},
			wantMethod: "GET", wantURI: "/v1/health",
			want: Health{Status: "ok", Checks: []Check{{Name: "module", OK: true}}},
		},
		{
			name:       "health degraded is a body, not an error",
			call:       func(ctx context.Context, c *Client) (any, error) { return c.Health(ctx) },
			status:     503,
			reply:      Health{Status: "degraded", Checks: []Check{{Name: "module", Message: "not loaded"}}},
			wantMethod: "GET", wantURI: "/v1/health",
			want: Health{Status: "degraded", Checks: []Check{{Name: "module", Message: "not loaded"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sn := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.reply == nil {
					w.WriteHeader(tt.status)
					return
				}
				writeJSON(w, tt.status, tt.reply)
			})
			got, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			method, uri, ctype, body := sn.get()
			if method != tt.wantMethod || uri != tt.wantURI {
				t.Errorf("request = %s %s, want %s %s", method, uri, tt.wantMethod, tt.wantURI)
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %s, want %s", body, tt.wantBody)
			}
			if tt.wantBody != "" && ctype != "application/json" {
				t.Errorf("content-type = %q", ctype)
			}
			if tt.want != nil {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				if string(gj) != string(wj) {
					t.Errorf("got %s\nwant %s", gj, wj)
				}
			}
		})
	}
}

func TestClientMetrics(t *testing.T) {
	const text = "# HELP cgpu_up up\ncgpu_up 1\n"
	c, sn := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, text)
	})
	got, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != text {
		t.Errorf("metrics = %q, want %q", got, text)
	}
	if _, uri, _, _ := sn.get(); uri != "/metrics" {
		t.Errorf("uri = %s", uri)
	}
}

func TestClientAPIErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		code    string
		msg     string
		is      func(error) bool
		notFind bool
	}{
		{"not found", 404, `{"code":"not_found","message":"instance c9: not found"}`, CodeNotFound, "instance c9: not found", IsNotFound, false},
		{"no space", 409, `{"code":"no_space","message":"` + ErrorPrefixCreate + `GPU 0 already has 20 instances"}`, CodeNoSpace, ErrorPrefixCreate + "GPU 0 already has 20 instances", IsNoSpace, true},
		{"conflict", 409, `{"code":"conflict","message":"name taken"}`, CodeConflict, "name taken", IsConflict, true},
		{"busy", 409, `{"code":"busy","message":"holds memory"}`, CodeBusy, "holds memory", IsBusy, true},
		{"bad request", 400, `{"code":"bad_request","message":"memory must be > 0"}`, CodeBadRequest, "memory must be > 0", IsBadRequest, true},
		{"unavailable", 503, `{"code":"unavailable","message":"cgpu.ko not loaded"}`, CodeUnavailable, "cgpu.ko not loaded", IsUnavailable, true},
		{"bare 404 is not found", 404, "404 page not found\n", "", "cgpud: HTTP 404 Not Found: 404 page not found", IsNotFound, false},
		{"garbage 500", 500, "<html>", "", "cgpud: HTTP 500 Internal Server Error: <html>", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, err := c.GetInstance(context.Background(), "c9")
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T) is not an *APIError", err, err)
			}
			if ae.Status != tt.status || ae.Err.Code != tt.code {
				t.Errorf("status/code = %d/%q, want %d/%q", ae.Status, ae.Err.Code, tt.status, tt.code)
			}
			if err.Error() != tt.msg {
				t.Errorf("message = %q, want %q", err.Error(), tt.msg)
			}
			if tt.is != nil && !tt.is(err) {
				t.Errorf("predicate false for %v", err)
			}
			if IsNotFound(err) == tt.notFind {
				t.Errorf("IsNotFound = %v", IsNotFound(err))
			}
			if IsUnreachable(err) {
				t.Error("an API answer must not read as unreachable")
			}
		})
	}
}

func TestClientUnreachable(t *testing.T) {
	t.Run("no socket", func(t *testing.T) {
		sock := shortSocket(t)
		c := NewClient(sock)
		_, err := c.Version(context.Background())
		if !IsUnreachable(err) || !errors.Is(err, ErrDaemonUnreachable) {
			t.Fatalf("err = %v, want unreachable", err)
		}
		msg := err.Error()
		for _, want := range []string{"not running at " + sock, "systemctl start cgpud"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
		if IsNotFound(err) {
			t.Error("unreachable read as not found")
		}
	})
	t.Run("stale socket file", func(t *testing.T) {
		sock := shortSocket(t)
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		// Keep the file but stop listening: connect gets ECONNREFUSED.
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		_, err = NewClient(sock).GPUs(context.Background())
		if !IsUnreachable(err) || !strings.Contains(err.Error(), "systemctl start cgpud") {
			t.Fatalf("err = %v, want unreachable with a hint", err)
		}
	})
}

func TestClientTimeoutAndContext(t *testing.T) {
	release := make(chan struct{})
	c, _ := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, WithTimeout(100*time.Millisecond))
	defer close(release)
	start := time.Now()
	_, err := c.Version(context.Background())
	if err == nil {
		t.Fatal("want a timeout error")
	}
	if IsUnreachable(err) {
		t.Errorf("a slow daemon is not an absent one: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Version(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

func TestClientDefaultSocket(t *testing.T) {
	if got := NewClient("").Socket(); got != DefaultSocket {
		t.Errorf("Socket() = %q, want %q", got, DefaultSocket)
	}
}
