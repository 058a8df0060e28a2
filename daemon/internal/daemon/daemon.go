// Package daemon wires cgpud together: configuration and logging, the
// kernel client, GPU discovery, state, device filters and the instance
// Manager, the API server on its socket, and the systemd protocol (READY
// after discovery and listen, WATCHDOG, STOPPING, socket activation).
// Stopping the daemon leaves the kernel's instances in place: cgpu.ko keeps
// enforcing while cgpud is away, and the next start reconciles.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/cgpu-dev/cgpu/daemon/internal/server"
	"github.com/cgpu-dev/cgpu/internal/integration"
	"github.com/coreos/go-systemd/v22/activation"
	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Manager is what the daemon needs of internal/instance's Manager: the
// API's methods, a reconciliation at start and a loop that destroys the
// instances of containers that are gone.
type Manager interface {
	server.Service
	Reconcile(ctx context.Context) error
	// Run watches container cgroups until ctx ends.
	Run(ctx context.Context) error
}

// Parts are what a Builder makes from the configuration.
type Parts struct {
	Manager    Manager
	Collectors []prometheus.Collector
	// Reload applies the reloadable keys the parts use (placement); may be
	// nil.
	Reload func(config.Config)
	// Close releases what the parts hold (state store, /dev/cgpu); kernel
	// instances stay. May be nil.
	Close func() error
	// Status is a line for systemd's STATUS= once ready.
	Status string
}

// Builder makes the parts; Build is the real one.
type Builder func(ctx context.Context, c config.Config, log *logrus.Logger) (Parts, error)

// Notifier sends one sd_notify state; sent is false when there is no
// NOTIFY_SOCKET.
type Notifier func(state string) (sent bool, err error)

// Daemon is one run of cgpud.
type Daemon struct {
	loader    *config.Loader
	log       *logrus.Logger
	build     Builder
	notify    Notifier
	watchdog  func() (time.Duration, error)
	listeners func() ([]net.Listener, error)
	getenv    func(string) string
	signals   chan os.Signal
	lookup    server.GroupLookup
	stopGrace time.Duration
	ready     chan struct{}
	srvOpts   []server.Option
}

// Option configures New.
type Option func(*Daemon)

// WithBuilder replaces Build (tests, the benchmark).
func WithBuilder(b Builder) Option { return func(d *Daemon) { d.build = b } }

// WithNotifier replaces sd_notify.
func WithNotifier(n Notifier) Option { return func(d *Daemon) { d.notify = n } }

// WithWatchdog replaces the WATCHDOG_USEC lookup.
func WithWatchdog(f func() (time.Duration, error)) Option { return func(d *Daemon) { d.watchdog = f } }

// WithListeners replaces socket activation's LISTEN_FDS.
func WithListeners(f func() ([]net.Listener, error)) Option {
	return func(d *Daemon) { d.listeners = f }
}

// WithEnv replaces os.Getenv.
func WithEnv(getenv func(string) string) Option { return func(d *Daemon) { d.getenv = getenv } }

// WithSignals feeds signals from ch instead of the process's.
func WithSignals(ch chan os.Signal) Option { return func(d *Daemon) { d.signals = ch } }

// WithGroupLookup replaces the group database.
func WithGroupLookup(l server.GroupLookup) Option { return func(d *Daemon) { d.lookup = l } }

// WithServerOptions adds options to the API server (tests: peer resolver).
func WithServerOptions(o ...server.Option) Option {
	return func(d *Daemon) { d.srvOpts = append(d.srvOpts, o...) }
}

// New prepares a daemon that reads its configuration through loader.
func New(loader *config.Loader, log *logrus.Logger, opts ...Option) *Daemon {
	d := &Daemon{
		loader: loader,
		log:    log,
		build:  Build,
		notify: func(state string) (bool, error) { return sddaemon.SdNotify(false, state) },
		watchdog: func() (time.Duration, error) {
			return sddaemon.SdWatchdogEnabled(false)
		},
		listeners: activation.Listeners,
		getenv:    os.Getenv,
		lookup:    server.LookupGroup,
		stopGrace: 10 * time.Second,
		ready:     make(chan struct{}),
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Ready is closed once the daemon serves and has told systemd so.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

func (d *Daemon) sdNotify(state string) {
	sent, err := d.notify(state)
	switch {
	case err != nil:
		d.log.WithError(err).WithField("state", state).Warn("sd_notify failed")
	case !sent:
		d.log.WithField("state", state).Debug("sd_notify: no NOTIFY_SOCKET, not under systemd's notify protocol")
	}
}

func (d *Daemon) gid(name, key string) int64 {
	if name == "" {
		return -1
	}
	gid, err := d.lookup(name)
	if err != nil {
		lvl := logrus.WarnLevel
		if key == "socket_group" && errors.Is(err, fs.ErrNotExist) {
			lvl = logrus.DebugLevel // Listen has warned already
		} else if !errors.Is(err, fs.ErrNotExist) {
			lvl = logrus.ErrorLevel
		}
		d.log.WithFields(logrus.Fields{"key": key, "group": name}).WithError(err).Log(lvl, "group not found: its members get no access, root still has")
		return -1
	}
	return int64(gid)
}

// listen returns the API's listeners: systemd's under socket activation,
// else a socket of our own.
func (d *Daemon) listen(c config.Config) ([]net.Listener, bool, error) {
	if d.getenv("LISTEN_FDS") != "" {
		lns, err := d.listeners()
		if err != nil {
			return nil, false, fmt.Errorf("socket activation: %w", err)
		}
		var usable []net.Listener
		for _, ln := range lns {
			if ln != nil {
				usable = append(usable, ln)
			}
		}
		if len(usable) == 0 {
			return nil, false, errors.New("socket activation: LISTEN_FDS is set but no stream socket was passed")
		}
		return usable, true, nil
	}
	ln, err := server.Listen(c.Socket, server.SocketOptions{Group: c.SocketGroup, Lookup: d.lookup, Log: d.log})
	if err != nil {
		return nil, false, err
	}
	return []net.Listener{ln}, false, nil
}

// Run runs the daemon until ctx ends or SIGTERM/SIGINT, and returns nil
// after a clean stop.
func (d *Daemon) Run(ctx context.Context) error {
	cfg, err := d.loader.Load()
	if err != nil {
		return err
	}
	ConfigureLogger(d.log, cfg, d.getenv)
	if d.signals == nil {
		d.signals = make(chan os.Signal, 4)
		signal.Notify(d.signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer signal.Stop(d.signals)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	start := time.Now()
	parts, err := d.build(ctx, cfg, d.log)
	if err != nil {
		return err
	}
	defer func() {
		if parts.Close != nil {
			if err := parts.Close(); err != nil {
				d.log.WithError(err).Error("closing")
			}
		}
	}()
	serving := parts.Status
	if serving == "" {
		serving = "serving"
	}
	status := serving
	// A failed reconciliation (no module, no GPUs, a kernel instance that
	// could not be repaired) leaves the daemon up and degraded: Health
	// says why, reads work, and the Manager refuses what it cannot do.
	// One that succeeded may still leave it degraded (an instance kept
	// without its limit, a kernel instance kept unclaimed), which only
	// Health tells.
	if err := parts.Manager.Reconcile(ctx); err != nil {
		d.log.WithError(err).Error("reconcile: serving degraded")
		status = "degraded: " + oneLine(err.Error())
	} else if h, ok := healthWithin(ctx, parts.Manager, startHealthWait); ok && h.Status != "ok" {
		status = statusLine(h, serving)
		d.log.WithField("status", status).Error("serving degraded")
	}
	line := &notedStatus{cur: status}
	d.writeCDI(ctx, cfg, parts.Manager)

	lns, activated, err := d.listen(cfg)
	if err != nil {
		return err
	}
	access := server.Access{
		ReadGID: d.gid(cfg.SocketGroup, "socket_group"), WriteGID: d.gid(cfg.WriteGroup, "write_group"),
		ReadGroup: cfg.SocketGroup, WriteGroup: cfg.WriteGroup,
	}
	srv := server.New(parts.Manager, append([]server.Option{
		server.WithLogger(d.log), server.WithAccess(access),
		server.WithConnLimits(cfg.MaxConnections, cfg.MaxConnectionsPerUID),
		server.WithCollectors(parts.Collectors...),
	}, d.srvOpts...)...)

	var wg sync.WaitGroup
	errc := make(chan error, len(lns)+2)
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil {
				errc <- fmt.Errorf("serve on %s: %w", ln.Addr(), err)
			}
		}()
	}
	if cfg.MetricsAddress != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddress)
		if err != nil {
			srv.Shutdown(context.Background())
			wg.Wait()
			return fmt.Errorf("metrics_address: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.ServeMetrics(mln); err != nil {
				errc <- fmt.Errorf("metrics on %s: %w", cfg.MetricsAddress, err)
			}
		}()
		d.log.WithField("address", mln.Addr().String()).Info("serving /metrics over TCP")
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		if err := parts.Manager.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- fmt.Errorf("container watch: %w", err)
		}
	}()

	addrs := make([]string, len(lns))
	for i, ln := range lns {
		addrs[i] = ln.Addr().String()
	}
	d.log.WithFields(logrus.Fields{
		"socket": strings.Join(addrs, ","), "activated": activated,
		"startup": time.Since(start).Round(time.Millisecond), "placement": cfg.Placement,
	}).Info("cgpud ready")
	d.sdNotify("READY=1\nSTATUS=" + status)
	close(d.ready)
	// The watchdog's Health call keeps STATUS= current (systemctl status
	// shows it) at no cost of its own.
	stopWatchdog := d.startWatchdog(func(ctx context.Context) {
		h := parts.Manager.Health(ctx)
		if ctx.Err() != nil {
			return
		}
		if s := statusLine(h, serving); line.set(s) {
			d.sdNotify("STATUS=" + s)
		}
	})
	defer stopWatchdog()

	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-errc:
			runErr = err
			break loop
		case sig := <-d.signals:
			if sig == syscall.SIGHUP {
				cfg = d.reload(cfg, parts)
				continue
			}
			d.log.WithField("signal", sig.String()).Info("stopping; kernel instances stay in place")
			break loop
		}
	}
	d.sdNotify("STOPPING=1")
	stopWatchdog()
	shutCtx, done := context.WithTimeout(context.Background(), d.stopGrace)
	defer done()
	if err := srv.Shutdown(shutCtx); err != nil {
		d.log.WithError(err).Warn("requests still in flight at shutdown")
	}
	stopRun()
	<-runDone
	wg.Wait()
	return runErr
}

// startHealthWait bounds the Health call before READY: a Manager stuck
// there is the watchdog's business once serving, not a reason never to
// start.
const startHealthWait = time.Second

// healthWithin asks m for its Health for at most wait; ok is false when it
// did not answer.
func healthWithin(ctx context.Context, m Manager, wait time.Duration) (v1.Health, bool) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got := make(chan v1.Health, 1)
	go func() { got <- m.Health(ctx) }()
	select {
	case h := <-got:
		return h, ctx.Err() == nil
	case <-ctx.Done():
		return v1.Health{}, false
	}
}

// statusLine is STATUS= for a Health: serving when it is ok, else
// "degraded: " and each failing check with its message.
func statusLine(h v1.Health, serving string) string {
	if h.Status == "ok" {
		return serving
	}
	var why []string
	for _, c := range h.Checks {
		if !c.OK {
			why = append(why, c.Name+": "+c.Message)
		}
	}
	if len(why) == 0 {
		return oneLine(h.Status)
	}
	return oneLine(h.Status + ": " + strings.Join(why, "; "))
}

// oneLine keeps an sd_notify assignment on its line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// notedStatus is the STATUS= systemd was last told.
type notedStatus struct {
	mu  sync.Mutex
	cur string
}

// set records s and says whether it differs from what was told.
func (n *notedStatus) set(s string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s == n.cur {
		return false
	}
	n.cur = s
	return true
}

// writeCDI writes the CDI spec for the GPUs discovered; a failure is
// logged, not fatal: the API serves, and `cgpuctl setup` can write it.
func (d *Daemon) writeCDI(ctx context.Context, c config.Config, m Manager) {
	if c.CDIDir == "" {
		return
	}
	log := d.log.WithField("dir", c.CDIDir)
	gpus, err := m.GPUs(ctx)
	if err == nil && len(gpus) == 0 {
		log.Warn("CDI spec not written: no GPU found")
		return
	}
	var written []string
	if err == nil {
		written, err = integration.Write(integration.FromAPI(gpus),
			integration.WithCDIDir(c.CDIDir), integration.WithHooksDir(""), integration.WithDevDir(c.DevDir))
	}
	if err != nil {
		log.WithError(err).Warn("CDI spec not written (cgpuctl setup writes it too)")
		return
	}
	log.WithField("files", strings.Join(written, ",")).Info("CDI spec written")
}

// reload re-reads the configuration on SIGHUP and applies what it can.
func (d *Daemon) reload(old config.Config, parts Parts) config.Config {
	d.sdNotify("RELOADING=1")
	defer d.sdNotify("READY=1")
	c, err := d.loader.Load()
	if err != nil {
		d.log.WithError(err).Error("reload: keeping the running configuration")
		return old
	}
	changed := old.Changed(c)
	restart := old.NeedRestart(c)
	// What is in force: the reloadable keys from the file, the others as
	// they were; the next reload compares against it.
	inForce := old.WithReloaded(c)
	ConfigureLogger(d.log, inForce, d.getenv)
	if parts.Reload != nil {
		parts.Reload(inForce)
	}
	if len(restart) > 0 {
		d.log.WithField("keys", strings.Join(restart, ",")).Warn("reload: these keys take effect at the next restart")
	}
	d.log.WithField("changed", strings.Join(changed, ",")).Info("configuration reloaded")
	return inForce
}

// startWatchdog pings systemd at half of WATCHDOG_USEC; the returned func
// stops it (idempotent). A ping follows a Health call that returned, so a daemon whose Manager
// is stuck (a deadlock, a hung ioctl) gets restarted by systemd; a module
// that is missing makes Health degraded, not stuck, and pings go on.
func (d *Daemon) startWatchdog(alive func(context.Context)) func() {
	every, err := d.watchdog()
	if err != nil {
		d.log.WithError(err).Warn("watchdog: WATCHDOG_USEC unreadable; not pinging")
		return func() {}
	}
	if every <= 0 {
		return func() {}
	}
	every /= 2
	d.log.WithField("every", every).Debug("watchdog pings")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), every)
				answered := make(chan struct{})
				go func() { alive(ctx); close(answered) }()
				select {
				case <-answered:
				case <-ctx.Done():
				case <-stop:
					cancel()
					return
				}
				late := ctx.Err() != nil
				cancel()
				if late {
					d.log.Warn("watchdog: the manager did not answer in time; not pinging")
					continue
				}
				d.sdNotify("WATCHDOG=1")
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-done }) }
}
