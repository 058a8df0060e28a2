package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The limit tests tell their clients apart by the path each binds its end
// of the connection to ("uid-<uid>-<n>"), which the server side sees as
// the remote address: one process plays many uids.
const limitTestGID = 500

func uidFromAddr(c net.Conn) (Peer, error) {
	var uid, n uint32
	if _, err := fmt.Sscanf(filepath.Base(c.RemoteAddr().String()), "uid-%d-%d", &uid, &n); err != nil {
		return Peer{}, errors.New("the test client bound no uid-<uid>-<n> address")
	}
	return Peer{UID: uid, GID: limitTestGID}, nil
}

// limitServer serves s on a socket in a temporary directory until the test
// ends and returns the socket's path.
func limitServer(t *testing.T, s *Server) string {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Shutdown(t.Context())
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}

var dialSeq atomic.Int64

// dialAs connects to sock as uid (see uidFromAddr); uid < 0 binds nothing,
// a peer the resolver cannot identify.
func dialAs(t *testing.T, sock string, uid int) *clientConn {
	t.Helper()
	var laddr *net.UnixAddr
	if uid >= 0 {
		laddr = &net.UnixAddr{Net: "unix", Name: filepath.Join(filepath.Dir(sock), fmt.Sprintf("uid-%d-%d", uid, dialSeq.Add(1)))}
	}
	c, err := net.DialUnix("unix", laddr, &net.UnixAddr{Net: "unix", Name: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &clientConn{Conn: c, r: bufio.NewReader(c)}
}

// clientConn is a raw HTTP/1.1 client on one connection, so that a test
// knows which connection each request went on.
type clientConn struct {
	net.Conn
	r *bufio.Reader
}

// get sends GET path and returns the status and body; 0 when the server
// closed the connection without an answer.
func (c *clientConn) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cgpud\r\n\r\n", path); err != nil {
		return 0, nil
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// closedWithin says whether the server closes c, reading nothing more,
// before d has passed.
func (c *clientConn) closedWithin(d time.Duration) (bool, error) {
	c.SetReadDeadline(time.Now().Add(d))
	n, err := c.r.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case n > 0:
		return false, fmt.Errorf("got a byte instead of the end")
	case errors.As(err, &ne) && ne.Timeout():
		return false, nil
	}
	return true, nil
}

// refused checks a 503 with a v1.Error whose message holds want, and that
// the connection is closed right after.
func refused(t *testing.T, c *clientConn, status int, body []byte, want string) {
	t.Helper()
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s, want 503", status, body)
	}
	var e v1.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code != v1.CodeUnavailable || !strings.Contains(e.Message, want) {
		t.Errorf("body %s (%v), want code %s and %q", body, err, v1.CodeUnavailable, want)
	}
	if closed, err := c.closedWithin(2 * time.Second); !closed {
		t.Errorf("a refused connection stayed open (%v)", err)
	}
}

func TestConnLimitPerUID(t *testing.T) {
	s := New(&fakeService{}, WithPeerResolver(uidFromAddr), WithConnLimits(8, 2),
		WithAccess(Access{ReadGID: limitTestGID, WriteGID: -1}))
	sock := limitServer(t, s)

	// uid 1000 fills its two slots with kept-alive connections.
	held := []*clientConn{dialAs(t, sock, 1000), dialAs(t, sock, 1000)}
	for _, c := range held {
		if st, b := c.get(t, "/v1/version"); st != 200 {
			t.Fatalf("within the limit: %d %s", st, b)
		}
	}
	// Its third is refused...
	over := dialAs(t, sock, 1000)
	st, b := over.get(t, "/v1/version")
	refused(t, over, st, b, "uid 1000 has 2 connections open")
	// ...while other uids, root too, are served, and its own held ones still.
	for _, uid := range []int{1001, 0} {
		if st, b := dialAs(t, sock, uid).get(t, "/v1/version"); st != 200 {
			t.Errorf("uid %d: %d %s", uid, st, b)
		}
	}
	if st, b := held[0].get(t, "/v1/version"); st != 200 {
		t.Errorf("a held connection, again: %d %s", st, b)
	}
	if got := testutil.ToFloat64(s.refused.WithLabelValues("socket", "per_uid")); got != 1 {
		t.Errorf("cgpu_api_connections_refused_total{per_uid} %v, want 1", got)
	}

	// A closed connection gives its slot back once the server sees it go.
	held[1].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := dialAs(t, sock, 1000).get(t, "/v1/version")
		if st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot of a closed connection never came back (%d)", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnLimitRootReserve: uids other than root share max − perUID, so
// a flood of them leaves root its room; root is bounded by max alone.
func TestConnLimitRootReserve(t *testing.T) {
	s := New(&fakeService{}, WithPeerResolver(uidFromAddr), WithConnLimits(4, 1),
		WithAccess(Access{ReadGID: limitTestGID, WriteGID: -1}))
	sock := limitServer(t, s)
	for _, uid := range []int{1001, 1002, 1003} {
		if st, b := dialAs(t, sock, uid).get(t, "/v1/version"); st != 200 {
			t.Fatalf("uid %d within the limits: %d %s", uid, st, b)
		}
	}
	c := dialAs(t, sock, 1004)
	st, b := c.get(t, "/v1/version")
	refused(t, c, st, b, "to users other than root")
	if st, b := dialAs(t, sock, 0).get(t, "/v1/version"); st != 200 {
		t.Fatalf("root in its reserve: %d %s", st, b)
	}
	c = dialAs(t, sock, 0)
	st, b = c.get(t, "/v1/version")
	refused(t, c, st, b, "4 connections open")
	if got := testutil.ToFloat64(s.refused.WithLabelValues("socket", "total")); got != 2 {
		t.Errorf("cgpu_api_connections_refused_total{total} %v, want 2", got)
	}
	if got := s.conns.open(); got != 4 {
		t.Errorf("%d connections counted open, want 4", got)
	}
}

// TestConnLimitUnknownPeer: a peer whose credentials cannot be read is not
// root for the limits (its zero uid must not exempt it).
func TestConnLimitUnknownPeer(t *testing.T) {
	s := New(&fakeService{}, WithPeerResolver(uidFromAddr), WithConnLimits(4, 1))
	sock := limitServer(t, s)
	if st, b := dialAs(t, sock, -1).get(t, "/v1/version"); st != 403 {
		t.Fatalf("an unknown peer: %d %s, want 403", st, b)
	}
	c := dialAs(t, sock, -1)
	st, b := c.get(t, "/v1/version")
	refused(t, c, st, b, "connections open")
}

// TestConnLimitMetrics: the TCP metrics listener has its own bound.
func TestConnLimitMetrics(t *testing.T) {
	s := New(&fakeService{}, WithMetricsConnLimit(2))
	addr := serveMetrics(t, s)
	for range 2 {
		if st, b := dialTCP(t, addr).get(t, "/metrics"); st != 200 {
			t.Fatalf("within the limit: %d %.200s", st, b)
		}
	}
	c := dialTCP(t, addr)
	st, b := c.get(t, "/metrics")
	refused(t, c, st, b, "2 connections open")
	if got := testutil.ToFloat64(s.refused.WithLabelValues("metrics", "total")); got != 1 {
		t.Errorf("cgpu_api_connections_refused_total{metrics,total} %v, want 1", got)
	}
}

func serveMetrics(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeMetrics(ln) }()
	t.Cleanup(func() {
		s.Shutdown(t.Context())
		if err := <-done; err != nil {
			t.Errorf("serve metrics: %v", err)
		}
	})
	return ln.Addr().String()
}

func dialTCP(t *testing.T, addr string) *clientConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &clientConn{Conn: c, r: bufio.NewReader(c)}
}

// TestTimeouts: a client that sends nothing, one that keeps a connection
// idle, and one that sends its headers a byte at a time (slowloris) are
// all cut off, on the socket and on the metrics listener, and their slots
// come back.
func TestTimeouts(t *testing.T) {
	const short = 150 * time.Millisecond
	s := New(&fakeService{}, WithPeerResolver(rootPeer),
		WithTimeouts(Timeouts{ReadHeader: short, Read: short, Write: time.Second, Idle: short}))
	sock := limitServer(t, s)
	addr := serveMetrics(t, s)
	listeners := []struct {
		name, path string
		dial       func() *clientConn
	}{
		{"socket", "/v1/version", func() *clientConn { return dialAs(t, sock, 0) }},
		{"metrics", "/metrics", func() *clientConn { return dialTCP(t, addr) }},
	}
	for _, l := range listeners {
		t.Run(l.name+"/silent", func(t *testing.T) {
			if closed, err := l.dial().closedWithin(2 * time.Second); !closed {
				t.Errorf("a connection that sent nothing is still open (%v)", err)
			}
		})
		t.Run(l.name+"/idle", func(t *testing.T) {
			c := l.dial()
			if st, b := c.get(t, l.path); st != 200 {
				t.Fatalf("%d %.200s", st, b)
			}
			if closed, err := c.closedWithin(2 * time.Second); !closed {
				t.Errorf("an idle kept-alive connection is still open (%v)", err)
			}
		})
		t.Run(l.name+"/slowloris", func(t *testing.T) {
			c := l.dial()
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\n", l.path)
			start := time.Now()
			for time.Since(start) < 2*time.Second {
				if _, err := c.Write([]byte("X")); err != nil {
					return // cut off
				}
				if closed, _ := c.closedWithin(20 * time.Millisecond); closed {
					return
				}
			}
			t.Error("a client sending its headers a byte at a time held its connection for 2 s")
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.conns.open() != 0 || s.metricConns.open() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("slots still held: socket %d, metrics %d", s.conns.open(), s.metricConns.open())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnLimitClientSeesWhy: daemon/api/v1's client (the hook's, the
// CLI's) over the limit gets the 503 and its message, not a broken pipe or
// an unsolicited answer, every time.
func TestConnLimitClientSeesWhy(t *testing.T) {
	everyone := func(net.Conn) (Peer, error) { return Peer{UID: 1000, GID: limitTestGID}, nil }
	s := New(&fakeService{}, WithPeerResolver(everyone), WithConnLimits(2, 1),
		WithAccess(Access{ReadGID: limitTestGID, WriteGID: limitTestGID}))
	sock := limitServer(t, s)
	if st, b := dialAs(t, sock, 1000).get(t, "/v1/version"); st != 200 {
		t.Fatalf("the one connection uid 1000 may hold: %d %s", st, b)
	}
	for i := range 50 {
		c := v1.NewClient(sock)
		_, err := c.CreateInstance(t.Context(), v1.CreateRequest{ContainerID: "abc", Cgroup: "/x", Memory: 1})
		c.Close()
		var ae *v1.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || v1.Code(err) != v1.CodeUnavailable ||
			!strings.Contains(err.Error(), "uid 1000 has 1 connections open") {
			t.Fatalf("try %d: %v, want the 503 and why", i, err)
		}
	}
}
