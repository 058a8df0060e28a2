// Command mangen writes the man pages the packages ship: cgpuctl(1) and one
// page per subcommand from cgpuctl's cobra tree, and cgpud(8) from cgpud's
// own --help text, so the pages say what the binaries of the same commit do.
//
//	go run ./packaging/mangen -out DIR [-date UNIX-SECONDS] [-version V]
//
// Pages go to DIR/man1 and DIR/man8, uncompressed.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/cgpu-dev/cgpu/internal/cli"
	"github.com/cgpu-dev/cgpu/internal/config"
	"github.com/cgpu-dev/cgpu/internal/integration"
)

func main() {
	out := flag.String("out", "", "directory to write man1/ and man8/ into")
	date := flag.Int64("date", 0, "the pages' date as Unix seconds (default: $SOURCE_DATE_EPOCH, else now)")
	version := flag.String("version", "", "the version named in the pages' footer")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mangen -out DIR [-date UNIX-SECONDS] [-version V]")
		os.Exit(2)
	}
	when, err := pageDate(*date, os.Getenv("SOURCE_DATE_EPOCH"))
	if err == nil {
		err = generate(*out, when, *version)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mangen: %v\n", err)
		os.Exit(1)
	}
}

// pageDate is the flag, else SOURCE_DATE_EPOCH (reproducible builds), else now.
func pageDate(flagVal int64, env string) (time.Time, error) {
	switch {
	case flagVal != 0:
		return time.Unix(flagVal, 0).UTC(), nil
	case env != "":
		var s int64
		if _, err := fmt.Sscanf(env, "%d", &s); err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", env, err)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return time.Now().UTC(), nil
}

func generate(dir string, when time.Time, version string) error {
	source := "cgpu"
	if version != "" {
		source += " " + version
	}
	man1 := filepath.Join(dir, "man1")
	man8 := filepath.Join(dir, "man8")
	for _, d := range []string{man1, man8} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	root := cli.New()
	root.DisableAutoGenTag = true // no "Auto generated ... on <today>" line
	installedDefaults(root)
	hdr := &doc.GenManHeader{Section: "1", Date: &when, Source: source, Manual: "cgpu manual"}
	if err := doc.GenManTree(root, hdr, man1); err != nil {
		return fmt.Errorf("cgpuctl pages: %w", err)
	}
	page, err := cgpudPage(when, source)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(man8, "cgpud.8"), page, 0o644)
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

// cgpudPage turns `cgpud --help` (the flag package's usage, written by
// internal/config) into a roff page: the prose before "Flags:" is the
// description, the rest the options, kept as the usage prints them.
func cgpudPage(when time.Time, source string) ([]byte, error) {
	var help bytes.Buffer
	if _, err := config.Parse("cgpud", []string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		return nil, fmt.Errorf("cgpud --help: want the usage, got %v", err)
	}
	text := help.String()
	desc, flags, ok := strings.Cut(text, "\nFlags:\n")
	if !ok {
		return nil, errors.New("cgpud --help: no \"Flags:\" section")
	}
	// Drop the "Usage: cgpud [flags]" line: SYNOPSIS says it.
	if first, rest, ok := strings.Cut(desc, "\n"); ok && strings.HasPrefix(first, "Usage:") {
		desc = rest
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ".TH CGPUD 8 %q %q %q\n", when.Format("Jan 2006"), source, "cgpu manual")
	b.WriteString(".SH NAME\ncgpud \\- the cgpu node daemon\n")
	b.WriteString(".SH SYNOPSIS\n.B cgpud\n[\\fIflags\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n")
	writeParagraphs(&b, desc)
	b.WriteString(".SH OPTIONS\n.nf\n")
	b.WriteString(roffEscape(strings.TrimRight(flags, "\n")))
	b.WriteString("\n.fi\n")
	b.WriteString(".SH FILES\n")
	b.WriteString(".TP\n.I " + config.DefaultPath + "\nthe configuration; every key has a default\n")
	b.WriteString(".TP\n.I /run/cgpu/cgpud.sock\nthe API socket (cgpud.socket)\n")
	b.WriteString(".TP\n.I /var/lib/cgpu\nthe daemon's state\n")
	b.WriteString(".SH SEE ALSO\n.BR cgpuctl (1),\n.BR systemctl (1)\n")
	return b.Bytes(), nil
}

func writeParagraphs(w io.Writer, s string) {
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		fmt.Fprintf(w, ".PP\n%s\n", roffEscape(strings.TrimSpace(p)))
	}
}

// roffEscape keeps text literal: backslashes doubled, and a line that
// starts with . or ' not read as a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
