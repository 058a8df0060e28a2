// Command runtimebench measures container start latency with runc in the
// VM guest: `runc run -d` (create, the createRuntime hooks, start) timed
// from the call to its return, for bundles prepared by cgpu-bench-runtime:
// one without hooks, one with the cgpuctl hook and no slice asked for, one
// with the hook and a slice. The cases take turns in every round (the
// order rotates), so drift on a shared machine falls on all of them.
// Each container is deleted (poststop runs) outside the timed part.
//
//	runtimebench -bundles DIR [-n 60] [-warmup 3] [-runc runc] BASELINE CASE...
//
// A case is a bundle directory's name under DIR; ratios are to the first.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cgpu-dev/cgpu/internal/stats"
)

type benchCase struct {
	name   string
	starts []time.Duration
	stops  []time.Duration
}

func main() {
	bundles := flag.String("bundles", "", "directory holding one bundle per case")
	n := flag.Int("n", 60, "starts of each case")
	runc := flag.String("runc", "runc", "the runc binary")
	warmup := flag.Int("warmup", 3, "untimed rounds first")
	flag.Parse()
	if *bundles == "" || flag.NArg() < 2 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: runtimebench -bundles DIR [-n N] [-runc PATH] BASELINE CASE...")
		os.Exit(2)
	}
	cases := make([]*benchCase, 0, flag.NArg())
	for _, a := range flag.Args() {
		cases = append(cases, &benchCase{name: a})
	}
	if err := run(*runc, *bundles, *warmup, cases); err != nil {
		fmt.Fprintln(os.Stderr, "runtimebench: warm-up:", err)
		os.Exit(1)
	}
	for _, c := range cases {
		c.starts, c.stops = nil, nil
	}
	progress = os.Stderr
	if err := run(*runc, *bundles, *n, cases); err != nil {
		fmt.Fprintln(os.Stderr, "runtimebench:", err)
		os.Exit(1)
	}
	report(cases)
}

// progress, when set, gets a line every 10 rounds (a TCG guest is slow).
var progress io.Writer

func run(runc, bundles string, n int, cases []*benchCase) error {
	for i := 0; i < n; i++ {
		for j := range cases {
			c := cases[(i+j)%len(cases)]
			id := fmt.Sprintf("%s-%d", c.name, i)
			start, err := runcCmd(runc, filepath.Join(bundles, c.name), "run", "--no-pivot", "-d", id)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			stop, err := runcCmd(runc, "/", "delete", "-f", id)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			c.starts = append(c.starts, start)
			c.stops = append(c.stops, stop)
		}
		if progress != nil && (i+1)%10 == 0 {
			fmt.Fprintf(progress, "runtimebench: %d/%d rounds\n", i+1, n)
		}
	}
	return nil
}

// runcCmd runs runc ARGS in dir and returns how long it took. Its output
// goes to a file, not a pipe: a detached container inherits runc's stdio,
// and a pipe would keep Wait waiting for the container to end.
func runcCmd(runc, dir string, args ...string) (time.Duration, error) {
	f, err := os.CreateTemp("", "runtimebench")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd := exec.Command(runc, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	if err != nil {
		b, _ := os.ReadFile(f.Name())
		msg := strings.TrimSpace(string(b))
		if msg == "" {
			msg = "no output"
		}
		return d, fmt.Errorf("runc %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return d, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func report(cases []*benchCase) {
	base := cases[0]
	b50, b99 := stats.Percentile(base.starts, 50), stats.Percentile(base.starts, 99)
	fmt.Printf("%-16s %5s %12s %12s %10s %10s %16s\n", "case", "n", "start p50 ms", "start p99 ms", "p50 ratio", "p99 ratio", "delete p50 ms")
	for _, c := range cases {
		p50, p99 := stats.Percentile(c.starts, 50), stats.Percentile(c.starts, 99)
		fmt.Printf("%-16s %5d %12.2f %12.2f %10.3f %10.3f %16.2f\n", c.name, len(c.starts), ms(p50), ms(p99),
			float64(p50)/float64(b50), float64(p99)/float64(b99), ms(stats.Percentile(c.stops, 50)))
	}
	fmt.Println()
	for _, c := range cases {
		key := strings.ReplaceAll(c.name, "-", "_")
		p50, p99 := stats.Percentile(c.starts, 50), stats.Percentile(c.starts, 99)
		fmt.Printf("bench: runc_start_%s_p50 %.2f ms\n", key, ms(p50))
		fmt.Printf("bench: runc_start_%s_p99 %.2f ms\n", key, ms(p99))
		if c == base {
			continue
		}
		fmt.Printf("bench: runc_start_%s_ratio_p50 %.3f ratio\n", key, float64(p50)/float64(b50))
		fmt.Printf("bench: runc_start_%s_ratio_p99 %.3f ratio\n", key, float64(p99)/float64(b99))
		fmt.Printf("bench: runc_start_%s_extra_p50 %.2f ms\n", key, ms(p50-b50))
	}
}
