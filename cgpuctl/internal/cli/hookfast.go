package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cgpu-dev/cgpu/cgpuctl/internal/hook"
	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/buildinfo"
)

// hookFast runs `cgpuctl [--socket S] [--timeout D] hook STAGE` without
// building the command tree: runtimes call it for every container start,
// most of them without a slice. ok is false for any other command line,
// which then goes through cobra as usual (and gets the same behaviour).
func hookFast(ctx context.Context, argv []string, o Options) (code int, ok bool) {
	socket, timeout := v1.DefaultSocket, v1.DefaultRequestTimeout
	if s := o.Getenv(EnvSocket); s != "" {
		socket = s
	}
	var words []string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case name == "--socket" || name == "--timeout":
			if !hasVal {
				if i+1 >= len(argv) {
					return 0, false
				}
				i++
				val = argv[i]
			}
			if name == "--socket" {
				socket = val
			} else {
				d, err := time.ParseDuration(val)
				if err != nil {
					return 0, false
				}
				timeout = d
			}
		case strings.HasPrefix(a, "-"):
			return 0, false
		default:
			words = append(words, a)
		}
	}
	if len(words) != 2 || words[0] != "hook" {
		return 0, false
	}
	h := hook.New(hook.WithProcRoot(o.Paths.Proc), hook.WithConfigFile(o.Paths.Config), hook.WithDaemon(func() hook.Daemon {
		return v1.NewClient(socket, v1.WithTimeout(timeout), v1.WithUserAgent("cgpuctl/"+buildinfo.Version))
	}))
	var err error
	switch words[1] {
	case "create-runtime", "prestart", "createRuntime":
		_, err = h.CreateRuntime(ctx, o.Stdin)
	case "poststop":
		_, err = h.Poststop(ctx, o.Stdin)
	case "oci":
		_, _, err = h.Auto(ctx, o.Stdin)
	default:
		return 0, false
	}
	if err != nil {
		fmt.Fprintf(o.Stderr, "cgpuctl: %s\n", oneLine(err.Error()))
	}
	return ExitCode(err), true
}
