package devfilter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCharMajors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    map[string]uint32
		wantErr bool
	}{
		{
			name: "char and block sections",
			in:   "Character devices:\n  1 mem\n  4 /dev/vc/0\n236 nvidia-uvm\n\nBlock devices:\n  7 loop\n240 nvidia-uvm\n",
			want: map[string]uint32{"mem": 1, "/dev/vc/0": 4, "nvidia-uvm": 236},
		},
		{
			name: "block section first",
			in:   "Block devices:\n  8 sd\nCharacter devices:\n  1 mem\n",
			want: map[string]uint32{"mem": 1},
		},
		{
			name: "a name twice keeps the first",
			in:   "Character devices:\n195 nvidia\n196 nvidia\n",
			want: map[string]uint32{"nvidia": 195},
		},
		{name: "empty", in: "", want: map[string]uint32{}},
		{name: "no name", in: "Character devices:\n195\n", wantErr: true},
		{name: "bad number", in: "Character devices:\nx195 nvidia\n", wantErr: true},
		{name: "negative", in: "Character devices:\n-1 nvidia\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := charMajors(strings.NewReader(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("charMajors = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("major of %q = %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

func TestParseDevNumber(t *testing.T) {
	for _, tc := range []struct {
		in           string
		major, minor uint32
		wantErr      bool
	}{
		{in: "10:122\n", major: 10, minor: 122},
		{in: "10:0", major: 10, minor: 0},
		{in: "10", wantErr: true},
		{in: "10:x", wantErr: true},
		{in: ":5", wantErr: true},
		{in: "", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			ma, mi, err := parseDevNumber(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseDevNumber(%q) = %d:%d, want an error", tc.in, ma, mi)
				}
				return
			}
			if err != nil || ma != tc.major || mi != tc.minor {
				t.Errorf("parseDevNumber(%q) = %d:%d, %v; want %d:%d", tc.in, ma, mi, err, tc.major, tc.minor)
			}
		})
	}
}

// host lays out a fake /sys and /dev for resolveDevices.
type host struct {
	sysDev  string // content of sys/class/misc/cgpu/dev; "" = absent
	devNode string // "null" = dev/cgpu links to /dev/null, "file" = a regular file, "" = absent
}

func (h host) make(t *testing.T) (sysRoot, devRoot string) {
	t.Helper()
	root := t.TempDir()
	sysRoot, devRoot = filepath.Join(root, "sys"), filepath.Join(root, "dev")
	if err := os.MkdirAll(filepath.Join(sysRoot, "class", "misc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(devRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	if h.sysDev != "" {
		d := filepath.Join(sysRoot, "class", "misc", "cgpu")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "dev"), []byte(h.sysDev), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	switch h.devNode {
	case "null":
		// A user cannot mknod; a link to a character device stats the same.
		if err := os.Symlink("/dev/null", filepath.Join(devRoot, "cgpu")); err != nil {
			t.Fatal(err)
		}
	case "file":
		if err := os.WriteFile(filepath.Join(devRoot, "cgpu"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sysRoot, devRoot
}

func TestResolveDevices(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skipf("no /dev/null to stand for /dev/cgpu: %v", err)
	}
	for _, tc := range []struct {
		name    string
		proc    string
		host    host
		want    devices
		wantErr string
	}{
		{
			name: "nvidia host, cgpu in sysfs",
			proc: "testdata/proc-nvidia",
			host: host{sysDev: "10:122\n", devNode: "file"}, // sysfs wins over the node
			want: devices{uvmToolsMajor: 236, cgpuMajor: 10, cgpuMinor: 122},
		},
		{
			name: "no sysfs entry, the node",
			proc: "testdata/proc-nvidia",
			host: host{devNode: "null"},
			want: devices{uvmToolsMajor: 236, cgpuMajor: 1, cgpuMinor: 3},
		},
		{
			name: "nothing loaded but nvidia",
			proc: "testdata/proc-nouvm",
			host: host{},
			want: devices{},
		},
		{
			name:    "node is not a device",
			proc:    "testdata/proc-nvidia",
			host:    host{devNode: "file"},
			wantErr: "not a character device",
		},
		{
			name:    "malformed sysfs",
			proc:    "testdata/proc-nvidia",
			host:    host{sysDev: "garbage\n"},
			wantErr: "not MAJOR:MINOR",
		},
		{
			name:    "no /proc/devices",
			proc:    "testdata/does-not-exist",
			host:    host{sysDev: "10:122\n"},
			wantErr: "read device majors",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sysRoot, devRoot := tc.host.make(t)
			got, err := resolveDevices(tc.proc, sysRoot, devRoot)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolveDevices = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("resolveDevices = %+v, want %+v", got, tc.want)
			}
		})
	}
}
