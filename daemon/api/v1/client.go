package v1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Error codes carried in Error.Code.
const (
	CodeBadRequest  = "bad_request"
	CodeNotFound    = "not_found"
	CodeConflict    = "conflict"
	CodeNoSpace     = "no_space"
	CodeBusy        = "busy"
	CodeForbidden   = "forbidden"
	CodeTooLarge    = "too_large"
	CodeUnavailable = "unavailable"
	CodeInternal    = "internal"
)

// Default client timeouts. A create attaches a device filter and talks to the
// kernel, so the request timeout is generous; the dial timeout is short so a
// dead socket is reported at once.
const (
	DefaultDialTimeout    = 2 * time.Second
	DefaultRequestTimeout = 30 * time.Second
)

// ErrDaemonUnreachable is wrapped by every error that comes from failing to
// reach cgpud on its socket at all (no socket, refused, permission denied).
var ErrDaemonUnreachable = errors.New("cgpud unreachable")

// APIError is a non-2xx answer from cgpud: the HTTP status and the Error body.
type APIError struct {
	Status int // HTTP status code
	Err    Error
}

func (e *APIError) Error() string {
	if e.Err.Message != "" {
		return e.Err.Message
	}
	if e.Err.Code != "" {
		return fmt.Sprintf("cgpud: %s (HTTP %d)", e.Err.Code, e.Status)
	}
	return fmt.Sprintf("cgpud: HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// Code returns the machine-readable code of err if it is an *APIError, else "".
func Code(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Err.Code
	}
	return ""
}

// IsNotFound reports whether err is cgpud's not_found (or a bare 404).
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Err.Code == CodeNotFound || (ae.Err.Code == "" && ae.Status == http.StatusNotFound))
}

// IsConflict reports whether err is cgpud's conflict (name or cgroup taken).
func IsConflict(err error) bool { return Code(err) == CodeConflict }

// IsNoSpace reports whether err is cgpud's no_space (instance cap or memory).
func IsNoSpace(err error) bool { return Code(err) == CodeNoSpace }

// IsBusy reports whether err is cgpud's busy (the instance still holds memory).
func IsBusy(err error) bool { return Code(err) == CodeBusy }

// IsBadRequest reports whether err is cgpud's bad_request.
func IsBadRequest(err error) bool { return Code(err) == CodeBadRequest }

// IsUnavailable reports whether err is cgpud's unavailable (no module, no GPUs).
func IsUnavailable(err error) bool { return Code(err) == CodeUnavailable }

// IsUnreachable reports whether err means cgpud could not be reached.
func IsUnreachable(err error) bool { return errors.Is(err, ErrDaemonUnreachable) }

// unreachableError explains a failed connect in words that say what to do.
type unreachableError struct {
	socket string
	err    error
}

func (e *unreachableError) Error() string {
	switch {
	case errors.Is(e.err, syscall.EACCES), errors.Is(e.err, syscall.EPERM):
		return fmt.Sprintf("cannot connect to cgpud at %s: permission denied (run as root or as a member of group cgpu)", e.socket)
	case errors.Is(e.err, syscall.ENAMETOOLONG), errors.Is(e.err, syscall.EINVAL):
		return fmt.Sprintf("cannot connect to cgpud at %s: %v (socket path too long?)", e.socket, e.err)
	default:
		return fmt.Sprintf("cgpud is not running at %s (start it with `systemctl start cgpud`, or point --socket/CGPU_SOCKET at it): %v", e.socket, e.err)
	}
}

func (e *unreachableError) Unwrap() []error { return []error{ErrDaemonUnreachable, e.err} }

// Client talks to cgpud over its Unix socket. It is safe for concurrent use.
type Client struct {
	socket      string
	dialTimeout time.Duration
	timeout     time.Duration
	userAgent   string
	hc          *http.Client
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithTimeout bounds each request (0: no bound beyond the context's).
func WithTimeout(d time.Duration) ClientOption { return func(c *Client) { c.timeout = d } }

// WithDialTimeout bounds the connect to the socket.
func WithDialTimeout(d time.Duration) ClientOption { return func(c *Client) { c.dialTimeout = d } }

// WithUserAgent sets the User-Agent header (cgpud may log it).
func WithUserAgent(ua string) ClientOption { return func(c *Client) { c.userAgent = ua } }

// NewClient returns a client of the cgpud listening on socketPath
// ("" means DefaultSocket).
func NewClient(socketPath string, opts ...ClientOption) *Client {
	if socketPath == "" {
		socketPath = DefaultSocket
	}
	c := &Client{
		socket:      socketPath,
		dialTimeout: DefaultDialTimeout,
		timeout:     DefaultRequestTimeout,
		userAgent:   "cgpu-client/" + APIVersion,
	}
	for _, o := range opts {
		o(c)
	}
	d := &net.Dialer{Timeout: c.dialTimeout}
	c.hc = &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", c.socket)
			},
			MaxIdleConns:        4,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 4,
		},
		Timeout: c.timeout,
	}
	return c
}

// Socket returns the socket path the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Version returns cgpud's, the module's and the driver's versions.
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	err := c.do(ctx, http.MethodGet, "/v1/version", nil, nil, &v)
	return v, err
}

// Health returns cgpud's health. A degraded daemon answers 503 with a Health
// body: that is returned with a nil error, so callers read Status.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	resp, err := c.roundTrip(ctx, http.MethodGet, "/v1/health", nil, nil)
	if err != nil {
		return h, err
	}
	defer drain(resp)
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if rerr != nil {
			return h, fmt.Errorf("read GET /v1/health: %w", rerr)
		}
		if jerr := json.Unmarshal(body, &h); jerr == nil && h.Status != "" {
			return h, nil
		}
		if resp.StatusCode == http.StatusOK {
			return h, fmt.Errorf("decode GET /v1/health: unexpected body %q", truncate(body))
		}
		return h, apiError(resp.StatusCode, body)
	}
	return h, readError(resp)
}

// GPUs lists the discovered GPUs.
func (c *Client) GPUs(ctx context.Context) ([]GPU, error) {
	var g []GPU
	err := c.do(ctx, http.MethodGet, "/v1/gpus", nil, nil, &g)
	return g, err
}

// ListInstances lists instances; a non-empty containerID keeps only that
// container's.
func (c *Client) ListInstances(ctx context.Context, containerID string) ([]Instance, error) {
	var q url.Values
	if containerID != "" {
		q = url.Values{"container": {containerID}}
	}
	var l []Instance
	err := c.do(ctx, http.MethodGet, "/v1/instances", q, nil, &l)
	return l, err
}

// GetInstance returns one instance by name.
func (c *Client) GetInstance(ctx context.Context, name string) (Instance, error) {
	var in Instance
	err := c.do(ctx, http.MethodGet, "/v1/instances/"+url.PathEscape(name), nil, nil, &in)
	return in, err
}

// CreateInstance asks for a slice bound to req.Cgroup.
func (c *Client) CreateInstance(ctx context.Context, req CreateRequest) (Instance, error) {
	var in Instance
	err := c.do(ctx, http.MethodPost, "/v1/instances", nil, req, &in)
	return in, err
}

// ResizeInstance changes an instance's memory and/or weight.
func (c *Client) ResizeInstance(ctx context.Context, name string, req ResizeRequest) (Instance, error) {
	var in Instance
	err := c.do(ctx, http.MethodPatch, "/v1/instances/"+url.PathEscape(name), nil, req, &in)
	return in, err
}

// DestroyInstance removes an instance; force removes it even while its
// processes hold memory.
func (c *Client) DestroyInstance(ctx context.Context, name string, force bool) error {
	var q url.Values
	if force {
		q = url.Values{"force": {"1"}}
	}
	return c.do(ctx, http.MethodDelete, "/v1/instances/"+url.PathEscape(name), q, nil, nil)
}

// Inspect returns the data of `cgpuctl inspect`.
func (c *Client) Inspect(ctx context.Context) (Inspect, error) {
	var in Inspect
	err := c.do(ctx, http.MethodGet, "/v1/inspect", nil, nil, &in)
	return in, err
}

// Metrics returns the Prometheus text exposition as served.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.roundTrip(ctx, http.MethodGet, "/metrics", nil, nil)
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return "", readError(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read GET /metrics: %w", err)
	}
	return string(b), nil
}

// maxBody bounds what is read of a JSON answer or an error body.
const maxBody = 16 << 20

func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	resp, err := c.roundTrip(ctx, method, path, q, in)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return readError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

func (c *Client) roundTrip(ctx context.Context, method, path string, q url.Values, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	// The host part is ignored by the dialer; "cgpud" shows in logs.
	u := "http://cgpud" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil && isDialError(err) {
			return nil, &unreachableError{socket: c.socket, err: rootCause(err)}
		}
		return nil, fmt.Errorf("%s %s on %s: %w", method, path, c.socket, err)
	}
	return resp, nil
}

// isDialError tells a failed connect (the daemon is not there) from a
// failure later in the exchange.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// rootCause keeps the errno of a failed connect: the socket path is already
// in the message.
func rootCause(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

func readError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return apiError(resp.StatusCode, body)
}

func apiError(status int, body []byte) error {
	ae := &APIError{Status: status}
	if err := json.Unmarshal(body, &ae.Err); err != nil || (ae.Err.Code == "" && ae.Err.Message == "") {
		ae.Err = Error{Message: fmt.Sprintf("cgpud: HTTP %d %s: %s", status, http.StatusText(status), truncate(body))}
		ae.Err.Message = strings.TrimSuffix(strings.TrimSpace(ae.Err.Message), ":")
	}
	return ae
}

func truncate(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}
