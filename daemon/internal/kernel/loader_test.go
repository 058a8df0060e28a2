package kernel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type recordRunner struct {
	argv [][]string
	out  []byte
	err  error
}

func (r *recordRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.argv = append(r.argv, append([]string{name}, args...))
	return r.out, r.err
}

func TestLoaderEnsure(t *testing.T) {
	cases := []struct {
		name     string
		loaded   bool
		runErr   error
		out      string
		wantArgv [][]string
		wantErr  string
	}{
		{"loaded already: no modprobe", true, nil, "", nil, ""},
		{"not loaded: modprobe cgpu", false, nil, "", [][]string{{"modprobe", "cgpu"}}, ""},
		{"modprobe fails: its output in the error", false, errors.New("exit status 1"),
			"modprobe: FATAL: Module cgpu not found\n", [][]string{{"modprobe", "cgpu"}}, "Module cgpu not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sys := t.TempDir()
			if c.loaded {
				if err := os.MkdirAll(filepath.Join(sys, "module", "cgpu"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := &recordRunner{out: []byte(c.out), err: c.runErr}
			l := NewLoader(WithSysRoot(sys))
			l.run = r
			err := l.Ensure(context.Background())
			if !reflect.DeepEqual(r.argv, c.wantArgv) {
				t.Errorf("ran %q, want %q", r.argv, c.wantArgv)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Ensure: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Ensure: %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}

func TestLoaderModuleVersion(t *testing.T) {
	proc := t.TempDir()
	l := NewLoader(WithProcRoot(proc))
	if _, err := l.ModuleVersion(); !errors.Is(err, ErrNoModule) {
		t.Errorf("no /proc/cgpu_km: %v, want ErrNoModule", err)
	}
	if err := os.MkdirAll(filepath.Join(proc, "cgpu_km"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "cgpu_km", "version"), []byte("1.0.0\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	v, err := l.ModuleVersion()
	if err != nil || v != "1.0.0" {
		t.Errorf("ModuleVersion = %q, %v; want 1.0.0", v, err)
	}
}
