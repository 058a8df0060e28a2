package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgpu-dev/cgpu/internal/cli"
)

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := generate(dir, when, "1.2.3"); err != nil {
		t.Fatal(err)
	}

	// One page per command a user can run, named the way cobra/doc does.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(dir, "man1", name))
		if err != nil {
			t.Errorf("no page for %q: %v", c.CommandPath(), err)
		} else if !strings.Contains(string(b), `"cgpu 1.2.3"`) || !strings.Contains(string(b), "Dec 2026") {
			t.Errorf("%s: header lacks the version or the date:\n%.200s", name, b)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cli.New())

	// The page shows the installed default, not the generator's own path.
	setup, err := os.ReadFile(filepath.Join(dir, "man1", "cgpuctl-setup.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(setup), `--hook-binary\fP="/usr/bin/cgpuctl"`) {
		t.Errorf("cgpuctl-setup.1: --hook-binary's default is not /usr/bin/cgpuctl:\n%s", setup)
	}

	b, err := os.ReadFile(filepath.Join(dir, "man8", "cgpud.8"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{".TH CGPUD 8", ".SH DESCRIPTION", ".SH OPTIONS", "-log-level", "-config", "/etc/cgpu/cgpud.toml"} {
		if !strings.Contains(page, want) {
			t.Errorf("cgpud.8 lacks %q", want)
		}
	}
	if strings.Contains(page, "Usage:") {
		t.Errorf("cgpud.8 repeats the usage line the synopsis gives")
	}
}

func TestRoffEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, `plain`},
		{`a\b`, `a\eb`},
		{".start\n'quote\nmid.dle", "\\&.start\n\\&'quote\nmid.dle"},
	}
	for _, tt := range tests {
		if got := roffEscape(tt.in); got != tt.want {
			t.Errorf("roffEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPageDate(t *testing.T) {
	tests := []struct {
		name    string
		flag    int64
		env     string
		want    int64
		wantErr bool
	}{
		{"flag wins", 100, "200", 100, false},
		{"env", 0, "200", 200, false},
		{"bad env", 0, "soon", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pageDate(tt.flag, tt.env)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Unix() != tt.want {
				t.Errorf("got %d, want %d", got.Unix(), tt.want)
			}
		})
	}
}
