package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
)

// MaxBody bounds a request body; more gets 413.
const MaxBody = 64 << 10

// Timeouts bound each phase of a connection, so that a client that sends
// slowly or not at all (slowloris) cannot hold a connection, and its slot
// in the limits, for long. Zero leaves a phase unbounded.
type Timeouts struct {
	// ReadHeader: from the start of a request to the end of its headers
	// (the first request's clock starts at accept).
	ReadHeader time.Duration
	// Read: the whole request, body included.
	Read time.Duration
	// Write: from the end of the request's headers to the end of the
	// answer, the handler's work included.
	Write time.Duration
	// Idle: a kept-alive connection waiting for its next request.
	Idle time.Duration
}

// DefaultTimeouts suit a local API whose clients are cgpuctl and the OCI
// hook (daemon/api/v1's client: 2 s to connect, 30 s a request, idle
// connections closed after 30 s) and Prometheus. Headers and a body of at
// most MaxBody come from a local process at once: 5 s and 10 s are ample.
// Write is above the client's 30 s so that cgpud never cuts an answer a
// client still waits for. Idle is above the client's 30 s so that the
// client, not cgpud, closes an idle connection: a client never sends a
// request on a connection cgpud is closing at that moment.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 60 * time.Second, Idle: 60 * time.Second}
}

// Server serves the API. Build it with New, then Serve on one or more
// listeners; Shutdown stops them all.
type Server struct {
	svc      Service
	log      logrus.FieldLogger
	access   Access
	resolve  PeerResolver
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
	http     *http.Server
	metrics  *http.Server // the TCP /metrics listener's (ServeMetrics)

	timeouts           Timeouts
	maxConns, perUID   int
	metricsMaxConns    int
	conns, metricConns *limiter
	refused            *prometheus.CounterVec
	refusing           chan struct{} // limitListener.refuse's, shared by every listener
}

// Option configures New.
type Option func(*Server)

// WithLogger sets the logger (logrus' standard logger by default).
func WithLogger(l logrus.FieldLogger) Option { return func(s *Server) { s.log = l } }

// WithAccess sets who may read and write (default: root only).
func WithAccess(a Access) Option { return func(s *Server) { s.access = a } }

// WithPeerResolver replaces SOPeerCred (tests).
func WithPeerResolver(r PeerResolver) Option { return func(s *Server) { s.resolve = r } }

// WithTimeouts replaces DefaultTimeouts(), on the socket and on the TCP
// metrics listener.
func WithTimeouts(t Timeouts) Option { return func(s *Server) { s.timeouts = t } }

// WithConnLimits sets the most connections open at once on the API
// socket(s), all listeners together, and the most one uid other than root
// may hold (DefaultMaxConns, DefaultMaxConnsPerUID). Uids other than root
// share max − perUID; perUID must be at least 1 and below max.
func WithConnLimits(max, perUID int) Option {
	return func(s *Server) { s.maxConns, s.perUID = max, perUID }
}

// WithMetricsConnLimit replaces MetricsMaxConns (tests).
func WithMetricsConnLimit(max int) Option { return func(s *Server) { s.metricsMaxConns = max } }

// WithCollectors registers collectors (internal/metrics' among them) on the
// registry /metrics serves.
func WithCollectors(cs ...prometheus.Collector) Option {
	return func(s *Server) {
		for _, c := range cs {
			s.registry.MustRegister(c)
		}
	}
}

// New builds a server over svc.
func New(svc Service, opts ...Option) *Server {
	s := &Server{
		svc:      svc,
		log:      logrus.StandardLogger(),
		access:   Access{ReadGID: -1, WriteGID: -1},
		resolve:  SOPeerCred,
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cgpu_api_requests_total",
			Help: "API requests served on the socket, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cgpu_api_request_duration_seconds",
			Help:    "Time to serve an API request, by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	s.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cgpu_api_connections_refused_total",
		Help: "Connections closed at accept because too many were open, by listener (socket, metrics) and limit (total, per_uid).",
	}, []string{"listener", "reason"})
	s.timeouts = DefaultTimeouts()
	s.maxConns, s.perUID, s.metricsMaxConns = DefaultMaxConns, DefaultMaxConnsPerUID, MetricsMaxConns
	for _, o := range opts {
		o(s)
	}
	s.conns = newLimiter(s.maxConns, s.perUID)
	s.metricConns = newLimiter(s.metricsMaxConns, 0)
	s.refusing = make(chan struct{}, maxRefusing)
	s.registry.MustRegister(s.requests, s.latency, s.refused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cgpu_api_connections",
			Help: "Connections open on the API socket.",
		}, func() float64 { return float64(s.conns.open()) }))
	s.handler = s.routes()
	s.http = s.httpServer(s.handler)
	s.http.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if pc, ok := c.(*peerConn); ok {
			return withPeer(ctx, pc.peer, pc.err)
		}
		p, err := s.resolve(c)
		return withPeer(ctx, p, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.MetricsHandler())
	s.metrics = s.httpServer(mux)
	return s
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.timeouts.ReadHeader,
		ReadTimeout:       s.timeouts.Read,
		WriteTimeout:      s.timeouts.Write,
		IdleTimeout:       s.timeouts.Idle,
		MaxHeaderBytes:    16 << 10,
	}
}

// Handler is the API's handler with authorisation. Requests must carry the
// peer that ConnContext stores; Serve arranges that.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry is what /metrics serves, for a second listener (MetricsHandler).
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// MetricsHandler serves the registry without the socket's peer checks, for
// the TCP metrics address.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Serve serves the API on ln, a Unix socket, until Shutdown; it returns
// nil after a Shutdown. The connection limits count the connections of
// every listener Serve is given together.
func (s *Server) Serve(ln net.Listener) error {
	ln = &limitListener{Listener: ln, lim: s.conns, resolve: s.resolve, name: "socket", refused: s.refused, log: s.log, refusing: s.refusing}
	if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeMetrics serves GET /metrics alone on ln (the TCP metrics_address),
// without the socket's peer checks, with the same timeouts and at most
// MetricsMaxConns connections at once; it returns nil after a Shutdown.
func (s *Server) ServeMetrics(ln net.Listener) error {
	ln = &limitListener{Listener: ln, lim: s.metricConns, name: "metrics", refused: s.refused, log: s.log, refusing: s.refusing}
	if err := s.metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting, lets requests in flight finish until ctx ends,
// and closes the listeners, the metrics listener's too.
func (s *Server) Shutdown(ctx context.Context) error {
	return errors.Join(s.http.Shutdown(ctx), s.metrics.Shutdown(ctx))
}
