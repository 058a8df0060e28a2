// Package ctest holds Go mirrors of C headers to the C compiler's view: a
// test names C expressions, Run compiles a program that includes the
// header and prints each one, and the test compares the values with its
// Go constants and layouts. Only tests import it.
package ctest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Probe is a C program being written: one printed value per key.
type Probe struct {
	header string
	keys   map[string]bool
	body   strings.Builder
}

// New starts a probe of header, a path relative to the calling test's
// package directory (go test runs there).
func New(header string) *Probe {
	return &Probe{header: header, keys: map[string]bool{}}
}

func (p *Probe) add(key, format, expr string) {
	if key == "" || strings.ContainsAny(key, " \t\n\"\\%") || p.keys[key] {
		panic(fmt.Sprintf("ctest: key %q is empty, has a blank, quote, backslash or %%, or is given twice", key))
	}
	p.keys[key] = true
	fmt.Fprintf(&p.body, "\tprintf(\"%s %s\\n\", %s);\n", key, format, expr)
}

// Num prints the C expression expr (an integer) under key.
func (p *Probe) Num(key, expr string) {
	p.add(key, "%llu", "(unsigned long long)("+expr+")")
}

// Str prints the C expression expr (a string without newlines) under key.
func (p *Probe) Str(key, expr string) {
	p.add(key, "%s", expr)
}

// Result maps each key to the value the probe printed.
type Result map[string]string

// Num returns key's value as a number; a key the probe did not print fails
// the test.
func (r Result) Num(t testing.TB, key string) uint64 {
	t.Helper()
	s, ok := r[key]
	if !ok {
		t.Fatalf("ctest: the probe printed no %s", key)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("ctest: %s = %q: %v", key, s, err)
	}
	return n
}

// Run compiles the probe with gcc -Wall -Werror, runs it and returns what
// it printed. A missing header or compiler fails the test: the comparison
// is the only thing holding the Go mirror to the C side, so it must not
// quietly not happen.
func (p *Probe) Run(t testing.TB) Result {
	t.Helper()
	hdr, err := filepath.Abs(p.header)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hdr); err != nil {
		t.Fatalf("ctest: the header the Go mirror follows: %v", err)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("ctest: gcc is needed to compile %s for the comparison: %v", p.header, err)
	}
	src := "#include <stdio.h>\n#include <stddef.h>\n#include \"" + hdr + "\"\n\nint main(void)\n{\n" +
		p.body.String() + "\treturn 0;\n}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-o", bin, filepath.Join(dir, "probe.c")).CombinedOutput(); err != nil {
		t.Fatalf("ctest: compile the probe of %s: %v\n%s\n%s", p.header, err, out, src)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("ctest: run the probe of %s: %v", p.header, err)
	}
	r := Result{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !p.keys[k] {
			t.Fatalf("ctest: probe line %q", sc.Text())
		}
		r[k] = v
	}
	if len(r) != len(p.keys) {
		t.Fatalf("ctest: the probe printed %d of %d values", len(r), len(p.keys))
	}
	return r
}
