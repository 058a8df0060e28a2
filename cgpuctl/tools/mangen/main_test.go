package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgpu-dev/cgpu/cgpuctl/internal/cli"
)

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	when := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	if err := generate(dir, when, "cgpu 1.2.3"); err != nil {
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
}
