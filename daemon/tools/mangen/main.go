// Command mangen writes cgpud(8) from cgpud's own --help text, so the page
// says what the daemon of the same commit does. cgpuctl's pages come from
// cgpuctl/tools/mangen.
//
//	go run ./daemon/tools/mangen -out DIR [-date UNIX-SECONDS] [-version V]
//
// The page goes to DIR/man8, uncompressed.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cgpu-dev/cgpu/daemon/internal/config"
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
	man8 := filepath.Join(dir, "man8")
	if err := os.MkdirAll(man8, 0o755); err != nil {
		return err
	}
	page, err := cgpudPage(when, source)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(man8, "cgpud.8"), page, 0o644)
}

// cgpudPage turns `cgpud --help` (the flag package's usage, written by
// daemon/internal/config) into a roff page: the prose before "Flags:" is the
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
	manpage.WriteParagraphs(&b, desc)
	b.WriteString(".SH OPTIONS\n.nf\n")
	b.WriteString(manpage.Escape(strings.TrimRight(flags, "\n")))
	b.WriteString("\n.fi\n")
	b.WriteString(".SH FILES\n")
	b.WriteString(".TP\n.I " + config.DefaultPath + "\nthe configuration; every key has a default\n")
	b.WriteString(".TP\n.I /run/cgpu/cgpud.sock\nthe API socket (cgpud.socket)\n")
	b.WriteString(".TP\n.I /var/lib/cgpu\nthe daemon's state\n")
	b.WriteString(".SH SEE ALSO\n.BR cgpuctl (1),\n.BR systemctl (1)\n")
	return b.Bytes(), nil
}
