package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runner runs a command; a test replaces it to check the argv.
type runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

type execRunner struct{}

func (execRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// Loader loads cgpu.ko and reports its version.
type Loader struct {
	procRoot string
	sysRoot  string
	run      runner
}

// LoaderOption configures NewLoader.
type LoaderOption func(*Loader)

// WithProcRoot reads <dir>/cgpu_km/version instead of /proc's.
func WithProcRoot(dir string) LoaderOption { return func(l *Loader) { l.procRoot = dir } }

// WithSysRoot looks for <dir>/module/cgpu instead of /sys's.
func WithSysRoot(dir string) LoaderOption { return func(l *Loader) { l.sysRoot = dir } }

// NewLoader returns a Loader on the host's /proc and /sys.
func NewLoader(opts ...LoaderOption) *Loader {
	l := &Loader{procRoot: "/proc", sysRoot: "/sys", run: execRunner{}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Loaded reports whether cgpu.ko is in the kernel.
func (l *Loader) Loaded() bool {
	_, err := os.Stat(filepath.Join(l.sysRoot, "module", "cgpu"))
	return err == nil
}

// Ensure loads cgpu.ko with modprobe unless it is loaded already.
func (l *Loader) Ensure(ctx context.Context) error {
	if l.Loaded() {
		return nil
	}
	out, err := l.run.Run(ctx, "modprobe", "cgpu")
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg != "" {
			return fmt.Errorf("modprobe cgpu: %w: %s", err, msg)
		}
		return fmt.Errorf("modprobe cgpu: %w", err)
	}
	return nil
}

// ModuleVersion is the loaded module's version (/proc/cgpu_km/version);
// ErrNoModule when it is not loaded.
func (l *Loader) ModuleVersion() (string, error) {
	p := filepath.Join(l.procRoot, "cgpu_km", "version")
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("read %s: %w", p, ErrNoModule)
		}
		return "", fmt.Errorf("read module version: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("read %s: empty", p)
	}
	return v, nil
}
