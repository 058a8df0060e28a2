// Package manpage holds what the two man-page generators (cgpuctl's in
// cgpuctl/tools/mangen, cgpud's in daemon/tools/mangen) share: the page date
// and roff escaping.
package manpage

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Flags are the generators' common command line.
type Flags struct {
	Out     string
	Date    time.Time
	Version string
}

// Source is the footer's source field: "cgpu" or "cgpu VERSION".
func (f Flags) Source() string {
	if f.Version == "" {
		return "cgpu"
	}
	return "cgpu " + f.Version
}

// ParseFlags reads -out, -date and -version; it exits with a usage line on
// a bad command line.
func ParseFlags(name string) Flags {
	out := flag.String("out", "", "directory to write the pages' section directories into")
	date := flag.Int64("date", 0, "the pages' date as Unix seconds (default: $SOURCE_DATE_EPOCH, else now)")
	version := flag.String("version", "", "the version named in the pages' footer")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "usage: %s -out DIR [-date UNIX-SECONDS] [-version V]\n", name)
		os.Exit(2)
	}
	when, err := PageDate(*date, os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	return Flags{Out: *out, Date: when, Version: *version}
}

// PageDate is the flag, else SOURCE_DATE_EPOCH (reproducible builds), else now.
func PageDate(flagVal int64, env string) (time.Time, error) {
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

// WriteParagraphs writes blank-line separated text as .PP paragraphs.
func WriteParagraphs(w io.Writer, s string) {
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		fmt.Fprintf(w, ".PP\n%s\n", Escape(strings.TrimSpace(p)))
	}
}

// Escape keeps text literal: backslashes doubled, and a line that starts
// with . or ' not read as a request.
func Escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
