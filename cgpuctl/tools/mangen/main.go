// Command mangen writes cgpuctl's man pages, cgpuctl(1) and one page per
// subcommand, from cgpuctl's own cobra tree, so the pages say what the binary
// of the same commit does. cgpud(8) comes from daemon/tools/mangen.
//
//	go run ./cgpuctl/tools/mangen -out DIR [-date UNIX-SECONDS] [-version V]
//
// Pages go to DIR/man1, uncompressed.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/cgpu-dev/cgpu/cgpuctl/internal/cli"
	"github.com/cgpu-dev/cgpu/internal/integration"
	"github.com/cgpu-dev/cgpu/internal/manpage"
)

func main() {
	f := manpage.ParseFlags("mangen")
	if err := generate(f.Out, f.Date, f.Source()); err != nil {
		fmt.Fprintf(os.Stderr, "mangen: %v\n", err)
		os.Exit(1)
	}
}

func generate(dir string, when time.Time, source string) error {
	man1 := filepath.Join(dir, "man1")
	if err := os.MkdirAll(man1, 0o755); err != nil {
		return err
	}
	root := cli.New()
	root.DisableAutoGenTag = true // no "Auto generated ... on <today>" line
	installedDefaults(root)
	hdr := &doc.GenManHeader{Section: "1", Date: &when, Source: source, Manual: "cgpu manual"}
	if err := doc.GenManTree(root, hdr, man1); err != nil {
		return fmt.Errorf("cgpuctl pages: %w", err)
	}
	return nil
}

// installedDefaults makes the pages show the defaults of an installed
// cgpuctl: setup's --hook-binary falls back to the running executable when
// /usr/bin/cgpuctl is missing, which on a build host would put the
// generator's own temporary path into the page.
func installedDefaults(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("hook-binary"); f != nil {
			f.DefValue = integration.DefaultHookBinary
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
