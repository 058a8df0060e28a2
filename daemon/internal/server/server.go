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
}

// Option configures New.
type Option func(*Server)

// WithLogger sets the logger (logrus' standard logger by default).
func WithLogger(l logrus.FieldLogger) Option { return func(s *Server) { s.log = l } }

// WithAccess sets who may read and write (default: root only).
func WithAccess(a Access) Option { return func(s *Server) { s.access = a } }

// WithPeerResolver replaces SOPeerCred (tests).
func WithPeerResolver(r PeerResolver) Option { return func(s *Server) { s.resolve = r } }

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
	s.registry.MustRegister(s.requests, s.latency)
	for _, o := range opts {
		o(s)
	}
	s.handler = s.routes()
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A create waits for the kernel and an fsync; a minute is ample.
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 16 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p, err := s.resolve(c)
			return withPeer(ctx, p, err)
		},
	}
	return s
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

// Serve serves the API on ln until Shutdown; it returns nil after a
// Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting, lets requests in flight finish until ctx ends,
// and closes the listeners.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}
