// Package config is cgpud's configuration: a versioned TOML file
// (/etc/cgpu/cgpud.toml) in which every key has a default and unknown keys
// are errors, and command-line flags, one per key, that override the file.
package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
	"github.com/sirupsen/logrus"
)

// DefaultPath is where the file is read from when --config is not given;
// it may be absent there.
const DefaultPath = "/etc/cgpu/cgpud.toml"

// Version is the file format this daemon reads.
const Version = 1

// Log formats.
const (
	FormatAuto     = "auto" // journald when under systemd (JOURNAL_STREAM), else text
	FormatText     = "text"
	FormatJSON     = "json"
	FormatJournald = "journald" // no timestamps; the journal adds them
)

// Config is every setting of cgpud. The toml tag is the key in the file and
// the flag's name (with _ as -).
type Config struct {
	// Version of the file format; 1.
	Version int `toml:"version"`
	// Socket is where the API listens (ignored under socket activation).
	Socket string `toml:"socket"`
	// SocketGroup owns the socket (mode 0660): its members may read (GET).
	// A group that does not exist leaves the socket root-only, with a
	// warning.
	SocketGroup string `toml:"socket_group"`
	// WriteGroup's members may also create, resize and destroy instances
	// (POST, PATCH, DELETE); root always may. The default, cgpu-admin, is a
	// separate group so that reading the node's state does not imply
	// changing it; set it to the socket group to give every reader the
	// write role, or to "" for root-only writes. Members of WriteGroup must
	// also be able to open the socket, i.e. be in SocketGroup.
	WriteGroup string `toml:"write_group"`
	// StateDir holds the bbolt state (state.db).
	StateDir string `toml:"state_dir"`
	// MaxConnections bounds the connections open at once on the API
	// socket; past it a connection is answered 503 and closed. Users other
	// than root share MaxConnections − MaxConnectionsPerUID, so root (the
	// OCI hook) always has room. server.DefaultMaxConns argues the number.
	MaxConnections int `toml:"max_connections"`
	// MaxConnectionsPerUID bounds the connections one uid other than root
	// holds at once.
	MaxConnectionsPerUID int `toml:"max_connections_per_uid"`
	// MetricsAddress is a TCP address (host:port) that serves /metrics as
	// well as the socket does; empty = socket only.
	MetricsAddress string `toml:"metrics_address"`
	// Placement picks a GPU when a create names none: binpack or spread.
	Placement string `toml:"placement"`
	// LogLevel: trace, debug, info, warning, error.
	LogLevel string `toml:"log_level"`
	// LogFormat: auto, text, json, journald.
	LogFormat string `toml:"log_format"`
	// SweepInterval is how often container cgroups are checked for ones
	// that are gone (cgroup.events notifications catch most at once).
	SweepInterval time.Duration `toml:"sweep_interval"`
	// Host paths, injectable for tests and odd hosts.
	CgroupRoot string `toml:"cgroup_root"`
	BPFFSRoot  string `toml:"bpffs_root"`
	ProcRoot   string `toml:"proc_root"`
	DevDir     string `toml:"dev_dir"`
	// DeviceFilter attaches an eBPF device filter to each container's
	// cgroup that hides the GPUs it was not given, nvidia-uvm-tools and
	// /dev/cgpu.
	DeviceFilter bool `toml:"device_filter"`
	// LoadModule runs `modprobe cgpu` at start when /dev/cgpu is missing
	// (packages load it at boot through modules-load.d instead).
	LoadModule bool `toml:"load_module"`
	// CDIDir gets cgpu's CDI spec (cgpu.yaml, the device cgpu.io/gpu=N per
	// discovered GPU and the OCI hooks) at every start; "" writes none.
	CDIDir string `toml:"cdi_dir"`
	// EnvPolicy says whose the containers' environment is on this node
	// (contract.EnvPolicy). The OCI hook, not cgpud, reads it from this
	// file at each container start; cgpud only checks it. So it is no
	// flag (the hook never sees cgpud's command line), and a change is in
	// force at once, reload or not.
	EnvPolicy contract.EnvPolicy `toml:"env_policy" flag:"-"`
}

// Default is the configuration with no file and no flags.
func Default() Config {
	return Config{
		Version:              Version,
		Socket:               v1.DefaultSocket,
		SocketGroup:          "cgpu",
		WriteGroup:           "cgpu-admin",
		StateDir:             "/var/lib/cgpu",
		MaxConnections:       256,
		MaxConnectionsPerUID: 32,
		MetricsAddress:       "",
		Placement:            v1.PlacementBinpack,
		LogLevel:             "info",
		LogFormat:            FormatAuto,
		SweepInterval:        30 * time.Second,
		CgroupRoot:           "/sys/fs/cgroup",
		BPFFSRoot:            "/sys/fs/bpf",
		ProcRoot:             "/proc",
		DevDir:               "/dev",
		DeviceFilter:         true,
		LoadModule:           false,
		CDIDir:               "/etc/cdi",
		EnvPolicy:            contract.EnvTrusted,
	}
}

// Reloadable are the keys a SIGHUP applies; a change to any other key is
// logged as needing a restart (sweep_interval among them: the container
// watch is built with it). env_policy is read by the hook from the file,
// so it needs no restart either.
var Reloadable = []string{"log_level", "log_format", "placement", "env_policy"}

// Validate checks every value.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Version != Version {
		bad("version", "%d; this cgpud reads version %d", c.Version, Version)
	}
	abs := map[string]string{
		"socket": c.Socket, "state_dir": c.StateDir, "cgroup_root": c.CgroupRoot,
		"bpffs_root": c.BPFFSRoot, "proc_root": c.ProcRoot, "dev_dir": c.DevDir,
	}
	for _, key := range []string{"socket", "state_dir", "cgroup_root", "bpffs_root", "proc_root", "dev_dir"} {
		if p := abs[key]; !filepath.IsAbs(p) {
			bad(key, "%q is not an absolute path", p)
		}
	}
	if c.CDIDir != "" && !filepath.IsAbs(c.CDIDir) {
		bad("cdi_dir", "%q is not an absolute path (or \"\" for none)", c.CDIDir)
	}
	if len(c.Socket) > 107 {
		bad("socket", "%d bytes; a Unix socket path takes at most 107", len(c.Socket))
	}
	// The unit's LimitNOFILE leaves room for 4096 connections and the
	// daemon's own fds; more needs a larger LimitNOFILE first.
	if c.MaxConnections < 2 || c.MaxConnections > 4096 {
		bad("max_connections", "%d; between 2 and 4096", c.MaxConnections)
	}
	if c.MaxConnectionsPerUID < 1 || c.MaxConnectionsPerUID >= c.MaxConnections {
		bad("max_connections_per_uid", "%d; at least 1 and below max_connections (%d)", c.MaxConnectionsPerUID, c.MaxConnections)
	}
	if c.MetricsAddress != "" {
		if _, port, err := net.SplitHostPort(c.MetricsAddress); err != nil || port == "" {
			bad("metrics_address", "%q is not host:port", c.MetricsAddress)
		}
	}
	switch c.Placement {
	case v1.PlacementBinpack, v1.PlacementSpread:
	default:
		bad("placement", "%q; binpack or spread", c.Placement)
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		bad("log_level", "%q; trace, debug, info, warning or error", c.LogLevel)
	}
	switch c.LogFormat {
	case FormatAuto, FormatText, FormatJSON, FormatJournald:
	default:
		bad("log_format", "%q; auto, text, json or journald", c.LogFormat)
	}
	if c.SweepInterval < time.Second || c.SweepInterval > time.Hour {
		bad("sweep_interval", "%v; between 1s and 1h", c.SweepInterval)
	}
	if _, err := contract.ParseEnvPolicy(string(c.EnvPolicy)); err != nil {
		bad("env_policy", "%q; %q (the containers' environment is the admin's) or %q (it is the workload's)", c.EnvPolicy, contract.EnvTrusted, contract.EnvUntrusted)
	}
	return errors.Join(errs...)
}

// Level is LogLevel parsed; Validate has checked it.
func (c Config) Level() logrus.Level {
	l, err := logrus.ParseLevel(c.LogLevel)
	if err != nil {
		return logrus.InfoLevel
	}
	return l
}

// Changed lists the keys whose values differ between c and d.
func (c Config) Changed(d Config) []string {
	var keys []string
	cv, dv := reflect.ValueOf(c), reflect.ValueOf(d)
	for i := range cv.NumField() {
		if !reflect.DeepEqual(cv.Field(i).Interface(), dv.Field(i).Interface()) {
			keys = append(keys, cv.Type().Field(i).Tag.Get("toml"))
		}
	}
	return keys
}

// NeedRestart lists the keys that differ between c and d and that a reload
// cannot apply.
func (c Config) NeedRestart(d Config) []string {
	var keys []string
	for _, k := range c.Changed(d) {
		reloadable := false
		for _, r := range Reloadable {
			reloadable = reloadable || r == k
		}
		if !reloadable {
			keys = append(keys, k)
		}
	}
	return keys
}

// WithReloaded returns c with the reloadable keys taken from n: what a
// reload puts in force while the other keys wait for a restart.
func (c Config) WithReloaded(n Config) Config {
	cv, nv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(n)
	for i := range cv.NumField() {
		key := cv.Type().Field(i).Tag.Get("toml")
		for _, r := range Reloadable {
			if r == key {
				cv.Field(i).Set(nv.Field(i))
			}
		}
	}
	return c
}
