package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	route := func(path string, methods map[string]http.HandlerFunc) {
		allow := make([]string, 0, len(methods))
		for m, h := range methods {
			mux.HandleFunc(m+" "+path, h)
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
		// Any other method on a known path: 405 with the JSON body.
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, codeMethod,
				fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		})
	}
	p := "/" + v1.APIVersion
	route(p+"/version", map[string]http.HandlerFunc{http.MethodGet: s.version})
	route(p+"/health", map[string]http.HandlerFunc{http.MethodGet: s.health})
	route(p+"/gpus", map[string]http.HandlerFunc{http.MethodGet: s.gpus})
	route(p+"/inspect", map[string]http.HandlerFunc{http.MethodGet: s.inspect})
	route(p+"/instances", map[string]http.HandlerFunc{
		http.MethodGet:  s.listInstances,
		http.MethodPost: s.createInstance,
	})
	route(p+"/instances/{name}", map[string]http.HandlerFunc{
		http.MethodGet:    s.getInstance,
		http.MethodPatch:  s.resizeInstance,
		http.MethodDelete: s.destroyInstance,
	})
	metrics := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	route("/metrics", map[string]http.HandlerFunc{http.MethodGet: metrics.ServeHTTP})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("%s: no such path (the API is under /%s/)", r.URL.Path, v1.APIVersion))
	})
	return s.authorize(mux)
}

// statusWriter remembers the status for the access log and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// authorize checks the connection's peer before anything else, then logs
// and counts the request.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		peer, err := PeerFrom(r.Context())
		log := s.log.WithFields(map[string]any{"method": r.Method, "path": r.URL.Path})
		switch {
		case err != nil:
			log.WithError(err).Warn("refused a request: unknown peer")
			writeError(sw, http.StatusForbidden, codeForbidden, "peer credentials unavailable: "+err.Error())
		case !s.access.allows(peer, isWrite(r.Method)):
			log.WithFields(map[string]any{"uid": peer.UID, "gid": peer.GID, "pid": peer.PID}).Info("refused a request: peer not permitted")
			what := "read"
			if isWrite(r.Method) {
				what = "change"
			}
			writeError(sw, http.StatusForbidden, codeForbidden,
				fmt.Sprintf("uid %d may not %s cgpu's state: %s", peer.UID, what, s.access.need(isWrite(r.Method))))
		default:
			next.ServeHTTP(sw, r)
		}
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		d := time.Since(start)
		s.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		s.latency.WithLabelValues(route).Observe(d.Seconds())
		log.WithFields(map[string]any{"status": sw.status, "duration": d, "uid": peer.UID, "pid": peer.PID}).Debug("request")
	})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	v, err := s.svc.Version(r.Context())
	if err != nil {
		writeErr(w, err, false)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	h := s.svc.Health(r.Context())
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

func (s *Server) gpus(w http.ResponseWriter, r *http.Request) {
	g, err := s.svc.GPUs(r.Context())
	if err != nil {
		writeErr(w, err, false)
		return
	}
	if g == nil {
		g = []v1.GPU{}
	}
	writeJSON(w, http.StatusOK, g)
}

func (s *Server) inspect(w http.ResponseWriter, r *http.Request) {
	in, err := s.svc.Inspect(r.Context())
	if err != nil {
		writeErr(w, err, false)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

func (s *Server) listInstances(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := queryParams(q, "container"); err != nil {
		writeErr(w, err, false)
		return
	}
	list, err := s.svc.ListInstances(r.Context(), q.Get("container"))
	if err != nil {
		writeErr(w, err, false)
		return
	}
	if list == nil {
		list = []v1.Instance{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) createInstance(w http.ResponseWriter, r *http.Request) {
	var req v1.CreateRequest
	if err := queryParams(r.URL.Query()); err != nil {
		writeErr(w, err, true)
		return
	}
	if err := decodeJSON(w, r, &req); err != nil {
		writeErr(w, err, true)
		return
	}
	if err := validateCreate(&req); err != nil {
		writeErr(w, err, true)
		return
	}
	in, err := s.svc.CreateInstance(r.Context(), req)
	if err != nil {
		writeErr(w, err, true)
		return
	}
	w.Header().Set("Location", "/"+v1.APIVersion+"/instances/"+url.PathEscape(in.Name))
	writeJSON(w, http.StatusCreated, in)
}

func (s *Server) getInstance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := validName(name); err != nil {
		writeErr(w, err, false)
		return
	}
	in, err := s.svc.GetInstance(r.Context(), name)
	if err != nil {
		writeErr(w, err, false)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

func (s *Server) resizeInstance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req v1.ResizeRequest
	err := validName(name)
	if err == nil {
		err = queryParams(r.URL.Query())
	}
	if err == nil {
		err = decodeJSON(w, r, &req)
	}
	if err == nil {
		err = validateResize(&req)
	}
	if err != nil {
		writeErr(w, err, false)
		return
	}
	in, err := s.svc.ResizeInstance(r.Context(), name, req)
	if err != nil {
		writeErr(w, err, false)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

func (s *Server) destroyInstance(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	err := validName(name)
	if err == nil {
		err = queryParams(q, "force")
	}
	force := false
	if err == nil && q.Has("force") {
		var perr error
		force, perr = strconv.ParseBool(q.Get("force"))
		if perr != nil {
			err = badRequest(fmt.Sprintf("force=%q: 1, true, 0 or false", q.Get("force")))
		}
	}
	if err != nil {
		writeErr(w, err, false)
		return
	}
	if err := s.svc.DestroyInstance(r.Context(), name, force); err != nil {
		writeErr(w, err, false)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
