package ctest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestProbePrintsNumbersAndStrings(t *testing.T) {
	hdr := filepath.Join(t.TempDir(), "x.h")
	src := "#define X_LEN 64\n#define X_MAX 0x1000000000000ULL\n#define X_PATH \"/dev/x\"\nstruct x { char a; long b; };\n"
	if err := os.WriteFile(hdr, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := New(hdr)
	p.Num("X_LEN", "X_LEN")
	p.Num("X_MAX", "X_MAX")
	p.Num("x.b.offset", "offsetof(struct x, b)")
	p.Str("X_PATH", "X_PATH")
	r := p.Run(t)
	if got := r.Num(t, "X_LEN"); got != 64 {
		t.Errorf("X_LEN = %d", got)
	}
	if got := r.Num(t, "X_MAX"); got != 1<<48 {
		t.Errorf("X_MAX = %d", got)
	}
	if got := r.Num(t, "x.b.offset"); got != 8 {
		t.Errorf("offsetof(struct x, b) = %d", got)
	}
	if r["X_PATH"] != "/dev/x" {
		t.Errorf("X_PATH = %q", r["X_PATH"])
	}
}

// recorder is a test that records a Fatalf instead of failing.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Helper() {}

func TestProbeOfAMissingHeaderFails(t *testing.T) {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := New(filepath.Join(t.TempDir(), "absent.h"))
		p.Num("X", "1")
		p.Run(rec)
		t.Error("Run returned for a missing header")
	}()
	<-done
	if !strings.Contains(rec.fatal, "absent.h") {
		t.Errorf("failure %q does not name the header", rec.fatal)
	}
}
