package daemon

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/cgpu-dev/cgpu/daemon/internal/server"
)

// The config's documented defaults are the server's, whose comments argue
// the numbers.
func TestConnLimitDefaults(t *testing.T) {
	c := config.Default()
	if c.MaxConnections != server.DefaultMaxConns || c.MaxConnectionsPerUID != server.DefaultMaxConnsPerUID {
		t.Errorf("config defaults %d/%d, server's %d/%d", c.MaxConnections, c.MaxConnectionsPerUID,
			server.DefaultMaxConns, server.DefaultMaxConnsPerUID)
	}
}

// TestConnLimitsFromConfig: max_connections and max_connections_per_uid
// reach the socket. This process is one uid: as root it is held to
// max_connections (2), as anyone else to max_connections_per_uid (1); the
// third connection is refused either way, and would not be with the
// defaults.
func TestConnLimitsFromConfig(t *testing.T) {
	h := newHarness(t, "max_connections = 2\nmax_connections_per_uid = 1\n")
	h.start()
	h.waitReady()
	status := make([]int, 3)
	for i := range status {
		c, err := net.Dial("unix", h.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // held open: each takes a slot
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(c, "GET /v1/version HTTP/1.1\r\nHost: cgpud\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		resp.Body.Close()
		status[i] = resp.StatusCode
	}
	if status[0] != 200 || status[2] != http.StatusServiceUnavailable {
		t.Errorf("statuses %v: want the first served and the third refused with 503", status)
	}
	if err := h.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
