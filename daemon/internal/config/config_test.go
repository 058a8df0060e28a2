package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, doc string
		check     func(Config) bool
		wantErr   string
	}{
		{"empty is the defaults", "", func(c Config) bool { return reflect.DeepEqual(c, Default()) }, ""},
		{"values", "placement = \"spread\"\nsweep_interval = \"45s\"\nlog_level = \"debug\"\ndevice_filter = false\nmetrics_address = \":9400\"\n",
			func(c Config) bool {
				return c.Placement == "spread" && c.SweepInterval == 45*time.Second && c.LogLevel == "debug" &&
					!c.DeviceFilter && c.MetricsAddress == ":9400" && c.Socket == Default().Socket
			}, ""},
		{"unknown key", "sockt = \"/x\"\n", nil, "unknown keys: sockt"},
		{"unknown table", "[server]\nsocket = \"/x\"\n", nil, "unknown keys: server"},
		{"wrong type", "device_filter = \"yes\"\n", nil, "device_filter"},
		{"bad toml", "socket = \n", nil, "testdoc"},
		{"version", "version = 2\n", nil, "version: 2"},
		{"placement", "placement = \"random\"\n", nil, "placement"},
		{"level", "log_level = \"loud\"\n", nil, "log_level"},
		{"format", "log_format = \"xml\"\n", nil, "log_format"},
		{"relative path", "state_dir = \"var/lib\"\n", nil, "state_dir"},
		{"long socket", "socket = \"/" + strings.Repeat("s", 120) + "\"\n", nil, "socket"},
		{"metrics address", "metrics_address = \"9400\"\n", nil, "metrics_address"},
		{"sweep too short", "sweep_interval = \"10ms\"\n", nil, "sweep_interval"},
		{"sweep not a duration", "sweep_interval = \"often\"\n", nil, "sweep_interval"},
		{"relative cdi dir", "cdi_dir = \"etc/cdi\"\n", nil, "cdi_dir"},
		{"no cdi", "cdi_dir = \"\"\n", func(c Config) bool { return c.CDIDir == "" }, ""},
		{"connection limits", "max_connections = 64\nmax_connections_per_uid = 8\n",
			func(c Config) bool { return c.MaxConnections == 64 && c.MaxConnectionsPerUID == 8 }, ""},
		{"max_connections 1", "max_connections = 1\nmax_connections_per_uid = 1\n", nil, "max_connections: 1; between 2 and 4096"},
		{"max_connections past the unit's fds", "max_connections = 5000\n", nil, "max_connections: 5000"},
		{"per uid 0", "max_connections_per_uid = 0\n", nil, "max_connections_per_uid: 0"},
		{"per uid leaves other uids nothing", "max_connections = 32\n", nil, "max_connections_per_uid: 32; at least 1 and below max_connections (32)"},
		{"max_connections not a number", "max_connections = \"many\"\n", nil, "max_connections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode(strings.NewReader(tt.doc), "testdoc")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one that mentions %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("got %+v", c)
			}
		})
	}
}

func writeConf(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cgpud.toml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagsOverrideTheFile(t *testing.T) {
	p := writeConf(t, "placement = \"spread\"\nlog_level = \"debug\"\nsocket = \"/run/a.sock\"\n")
	var out bytes.Buffer
	l, err := Parse("cgpud", []string{"--config", p, "--log-level", "warning", "--device-filter=false", "--sweep-interval", "5s"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Placement = "spread"   // file
	want.Socket = "/run/a.sock" // file
	want.LogLevel = "warning"   // flag over file
	want.DeviceFilter = false   // flag
	want.SweepInterval = 5 * time.Second
	if !reflect.DeepEqual(c, want) {
		t.Errorf("differs in %v: %+v", c.Changed(want), c)
	}
	if got := strings.Join(l.Overrides(), ","); got != "device_filter,log_level,sweep_interval" {
		t.Errorf("overrides %s", got)
	}

	// A reload re-reads the file; the flags still win.
	if err := os.WriteFile(p, []byte("placement = \"binpack\"\nlog_level = \"error\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c2.Placement != "binpack" || c2.LogLevel != "warning" || c2.Socket != Default().Socket {
		t.Errorf("reload: %+v", c2)
	}
	if got := strings.Join(c.NeedRestart(c2), ","); got != "socket" {
		t.Errorf("need restart: %q, want socket (placement is reloadable)", got)
	}
	if got := strings.Join(c.Changed(c2), ","); got != "socket,placement" {
		t.Errorf("changed: %q", got)
	}
	inForce := c.WithReloaded(c2)
	if inForce.Placement != "binpack" || inForce.Socket != "/run/a.sock" {
		t.Errorf("in force after reload: placement %s socket %s", inForce.Placement, inForce.Socket)
	}
}

func TestIntFlags(t *testing.T) {
	l, err := Parse("cgpud", []string{"--max-connections", "100", "--max-connections-per-uid", "10"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	l.Path = filepath.Join(t.TempDir(), "absent.toml")
	c, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConnections != 100 || c.MaxConnectionsPerUID != 10 {
		t.Errorf("max_connections %d, per uid %d; want 100, 10", c.MaxConnections, c.MaxConnectionsPerUID)
	}
	if _, err := Parse("cgpud", []string{"--max-connections", "lots"}, &bytes.Buffer{}); err == nil {
		t.Error("--max-connections lots was taken")
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.toml")
	l, err := Parse("cgpud", []string{"--config", missing}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an explicit config that is missing: %v, want ErrNotExist", err)
	}
	// At the default path (not given), a missing file means the defaults.
	l = &Loader{Path: missing, flags: Default()}
	c, err := l.Load()
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Errorf("implicit missing file: %+v %v", c, err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--placement", "random"},
		{"--sweep-interval", "often"},
		{"--no-such-flag"},
		{"stray"},
		{"--log-format", "xml"},
	} {
		var out bytes.Buffer
		l, err := Parse("cgpud", append([]string{"--config", "/nonexistent/x.toml"}, args...), &out)
		if err == nil {
			l.Path, l.explicit = filepath.Join(t.TempDir(), "none"), false
			_, err = l.Load()
		}
		if err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := Parse("cgpud", []string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"Usage: cgpud", "-config", "-socket-group", "-write-group", "-sweep-interval", "SIGHUP", "-version", "cgpu-admin"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestVersionFlag(t *testing.T) {
	l, err := Parse("cgpud", []string{"--version"}, &bytes.Buffer{})
	if err != nil || !l.ShowVersion {
		t.Errorf("%+v %v", l, err)
	}
}
