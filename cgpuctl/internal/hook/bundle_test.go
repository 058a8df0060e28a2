package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cgpu-dev/cgpu/internal/contract"
)

// TestConfigJSONIsARegularFileInTheBundle: whatever sits at
// <bundle>/config.json, the hook reads a regular file in the bundle or
// refuses at once; it neither waits on a FIFO nor follows a symlink,
// wherever it points.
func TestConfigJSONIsARegularFileInTheBundle(t *testing.T) {
	good, _ := bundle(t, contract.EnvMem+"=4")
	outside, _ := bundle(t, contract.EnvMem+"=8")
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		err   string // "" reads the env
	}{
		{name: "regular file", setup: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(good, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "FIFO", err: "config.json is not a regular file", setup: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			if err := unix.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			// Should an open block on it (the old hook did), open the
			// other end so that the reader is let go when the test ends.
			t.Cleanup(func() {
				if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					unix.Close(fd)
				}
			})
		}},
		{name: "symlink to a file in the bundle", err: "config.json is a symbolic link", setup: func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(good, "config.json"))
			if err := os.WriteFile(filepath.Join(dir, "real.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("real.json", filepath.Join(dir, "config.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlink out of the bundle", err: "config.json is a symbolic link", setup: func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(outside, "config.json"), filepath.Join(dir, "config.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlink to a device", err: "config.json is a symbolic link", setup: func(t *testing.T, dir string) {
			if err := os.Symlink("/dev/zero", filepath.Join(dir, "config.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory", err: "config.json is not a regular file", setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "config.json"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			type result struct {
				env []string
				err error
			}
			done := make(chan result, 1)
			go func() {
				env, err := ReadEnv(dir)
				done <- result{env, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("reading config.json still blocks after 5s")
			}
			if tt.err == "" {
				if r.err != nil || len(r.env) != 1 || r.env[0] != contract.EnvMem+"=4" {
					t.Fatalf("env %q, err %v", r.env, r.err)
				}
				return
			}
			if r.err == nil || !strings.Contains(r.err.Error(), tt.err) {
				t.Fatalf("env %q, err %v; want %q", r.env, r.err, tt.err)
			}
		})
	}
}

// TestBundlePathThroughASymlink: the bundle path is the runtime's and may
// pass through symlinks (/var/run -> /run); only config.json itself must
// not be one.
func TestBundlePathThroughASymlink(t *testing.T) {
	real, _ := bundle(t, contract.EnvMem+"=4")
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env, err := ReadEnv(link)
	if err != nil || len(env) != 1 {
		t.Fatalf("env %q, err %v", env, err)
	}
}
