package server

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Connection limits. Every connection holds an fd, a goroutine and its
// buffers (about 20 KiB: 19,000 idle connections took cgpud from 13 MB to
// 397 MB), and without a bound a flood of them exhausted the fds until the
// OCI hook could not connect and containers could not start.
//
// DefaultMaxConns (256) is far above honest use, which is brief: a hook
// run per container start and stop, a cgpuctl command, a scrape. It costs
// at most ~5 MiB, well inside the unit's MemoryMax, and a small part of
// its LimitNOFILE (config allows up to 4096, which the unit's 8192 fds and
// 256 MiB still hold).
//
// DefaultMaxConnsPerUID (32) is more than one user's scripts or a
// Prometheus need at once, and small enough that it takes seven flooding
// uids to fill what the uids other than root share.
//
// Root is not held to the per-uid limit: root connections are the runtime's
// hooks, one per container starting or stopping, and a node that starts a
// hundred containers at once must not fail them for it (root could stop
// cgpud anyway). Instead root is kept from being starved by everyone else:
// the uids other than root share MaxConns − MaxConnsPerUID between them, so
// root always finds at least MaxConnsPerUID slots, whatever other uids do,
// and up to all of them when they are idle.
const (
	DefaultMaxConns       = 256
	DefaultMaxConnsPerUID = 32
	// MetricsMaxConns bounds the TCP metrics listener, where peers have no
	// uid: a Prometheus or two and someone's curl.
	MetricsMaxConns = 16
)

// unknownUID is the bucket of peers whose credentials could not be read;
// (uid_t)-1 is no user's uid. They are refused every request (403), and
// meanwhile count against a uid's limit like anyone.
const unknownUID = ^uint32(0)

// A refused connection is answered 503 once its request is in (or after
// refuseWait): answered before it has written its request, a client sees
// an unsolicited answer or a broken pipe instead of the message. At most
// maxRefusing are waited for at once; under a flood the rest are closed
// at once, unanswered.
const (
	refuseWait   = 250 * time.Millisecond
	maxRefusing  = 16
	refuseWriteT = 100 * time.Millisecond
)

// limiter counts the open connections of one listener kind.
type limiter struct {
	max, perUID int // perUID 0: no identities (TCP), max alone applies
	mu          sync.Mutex
	root        int // open connections of uid 0
	others      int // open connections of every other uid, unknown peers included
	byUID       map[uint32]int
}

func newLimiter(max, perUID int) *limiter {
	return &limiter{max: max, perUID: perUID, byUID: map[uint32]int{}}
}

// acquire takes a slot for a connection of uid (root: a known peer of uid
// 0) and returns its release, or the reason it is refused ("total",
// "per_uid") and a message for the peer.
func (l *limiter) acquire(uid uint32, root bool) (release func(), reason, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.perUID == 0:
		if l.others >= l.max {
			return nil, "total", fmt.Sprintf("cgpud: %d connections open, the most it serves at once; try again", l.others)
		}
		l.others++
		return l.releaser(func() { l.others-- }), "", ""
	case root:
		if l.root+l.others >= l.max {
			return nil, "total", fmt.Sprintf("cgpud: %d connections open, the most it serves at once; try again", l.root+l.others)
		}
		l.root++
		return l.releaser(func() { l.root-- }), "", ""
	case l.byUID[uid] >= l.perUID:
		return nil, "per_uid", fmt.Sprintf("cgpud: uid %d has %d connections open, the most one uid may; close some and try again", uid, l.byUID[uid])
	case l.others >= l.max-l.perUID || l.root+l.others >= l.max:
		return nil, "total", fmt.Sprintf("cgpud: %d connections open, the most it serves at once to users other than root; try again", l.others)
	}
	l.others++
	l.byUID[uid]++
	return l.releaser(func() {
		l.others--
		if l.byUID[uid]--; l.byUID[uid] == 0 {
			delete(l.byUID, uid)
		}
	}), "", ""
}

// releaser makes f safe to call more than once, under l's lock.
func (l *limiter) releaser(f func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			f()
		})
	}
}

// open is the number of connections holding a slot.
func (l *limiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.root + l.others
}

// limitListener admits a connection only within its limiter's bounds. It
// reads the peer's credentials once, at accept, for the limit and for the
// requests (peerConn); a refused connection gets a 503 with a v1.Error
// and is closed at once, and Accept goes on to the next one.
type limitListener struct {
	net.Listener
	lim      *limiter
	resolve  PeerResolver // nil: no identities (TCP)
	name     string       // the listener label of the metrics
	refused  *prometheus.CounterVec
	log      logrus.FieldLogger
	mu       sync.Mutex
	lastWarn time.Time
	since    int           // refusals not yet logged
	refusing chan struct{} // a slot per refusal being answered
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var p Peer
		var perr error
		uid, root := unknownUID, false
		if l.resolve != nil {
			p, perr = l.resolve(c)
			if perr == nil {
				uid, root = p.UID, p.UID == 0
			}
		}
		release, reason, msg := l.lim.acquire(uid, root)
		if release == nil {
			l.refuse(c, reason, msg)
			continue
		}
		return &peerConn{Conn: c, peer: p, err: perr, release: release}, nil
	}
}

// refuse answers 503 with a v1.Error and closes c, off the accept loop.
func (l *limitListener) refuse(c net.Conn, reason, msg string) {
	l.refused.WithLabelValues(l.name, reason).Inc()
	select {
	case l.refusing <- struct{}{}:
		go func() {
			defer func() { <-l.refusing }()
			_ = c.SetReadDeadline(time.Now().Add(refuseWait))
			_, _ = c.Read(make([]byte, 4096))
			body, _ := json.Marshal(v1.Error{Code: codeUnavailable, Message: msg})
			_ = c.SetWriteDeadline(time.Now().Add(refuseWriteT))
			_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", len(body)+1, body)
			_ = c.Close()
		}()
	default:
		_ = c.Close()
	}

	// A flood must not flood the journal too: one line a minute at most,
	// with the count; the metric has every refusal.
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since++
	if now := time.Now(); now.Sub(l.lastWarn) >= time.Minute {
		l.log.WithFields(logrus.Fields{"listener": l.name, "refused": l.since}).Warn("refusing connections: " + msg)
		l.lastWarn, l.since = now, 0
	}
}

// peerConn is an admitted connection: its peer as read at accept, and its
// slot, given back on the first Close.
type peerConn struct {
	net.Conn
	peer    Peer
	err     error
	release func()
}

func (c *peerConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close a connection it ends ("Connection:
// close"), so that the client sees the end at once instead of after the
// server's lingering close.
func (c *peerConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
