// Package cli is cgpuctl: the admin commands (a client of daemon/api/v1 only),
// the OCI hook entry points and the host checks.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/buildinfo"
)

// EnvSocket overrides the default socket (the --socket flag overrides it).
const EnvSocket = "CGPU_SOCKET"

// Options are what a command reads from and writes to; tests replace them.
type Options struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Paths  Paths
	// Statfs returns the filesystem magic of a path (doctor's cgroup2 and
	// bpffs checks).
	Statfs func(path string) (int64, error)
}

// Option changes Options.
type Option func(*Options)

// WithIO sets stdin, stdout and stderr.
func WithIO(in io.Reader, out, errw io.Writer) Option {
	return func(o *Options) { o.Stdin, o.Stdout, o.Stderr = in, out, errw }
}

// WithGetenv replaces os.Getenv.
func WithGetenv(f func(string) string) Option { return func(o *Options) { o.Getenv = f } }

// WithPaths replaces the host paths.
func WithPaths(p Paths) Option { return func(o *Options) { o.Paths = p } }

// WithStatfs replaces the statfs used by doctor.
func WithStatfs(f func(string) (int64, error)) Option { return func(o *Options) { o.Statfs = f } }

type app struct {
	Options
	socket  string
	timeout time.Duration
}

// Main runs cgpuctl with args (without the program name) and returns the
// exit status; errors are printed as one line on stderr.
func Main(ctx context.Context, args []string, opts ...Option) int {
	if code, ok := hookFast(ctx, args, options(opts)); ok {
		return code
	}
	cmd, a := newRoot(opts...)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errSilent) {
		fmt.Fprintf(a.Stderr, "cgpuctl: %s\n", oneLine(err.Error()))
		if ExitCode(err) == ExitUsage {
			fmt.Fprintln(a.Stderr, "Run 'cgpuctl --help' for usage.")
		}
	}
	return ExitCode(err)
}

// New returns the root command (for documentation and completion tools).
func New(opts ...Option) *cobra.Command {
	cmd, _ := newRoot(opts...)
	return cmd
}

func options(opts []Option) Options {
	o := Options{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Paths: DefaultPaths(), Statfs: statfsMagic,
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func newRoot(opts ...Option) (*cobra.Command, *app) {
	a := &app{Options: options(opts)}
	defSocket := v1.DefaultSocket
	if s := a.Getenv(EnvSocket); s != "" {
		defSocket = s
	}
	root := &cobra.Command{
		Use:   "cgpuctl",
		Short: "Manage cgpu GPU memory slices and check the host",
		Long: `cgpuctl talks to cgpud on its Unix socket to show and manage GPU memory
slices (instances), is the OCI hook container runtimes call, and checks
that a host is ready for cgpu.

` + exitCodesHelp,
		Version:       buildinfo.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.socket, "socket", defSocket, "cgpud's socket (env "+EnvSocket+")")
	root.PersistentFlags().DurationVar(&a.timeout, "timeout", v1.DefaultRequestTimeout, "bound on each request to cgpud")
	root.AddCommand(
		a.inspectCmd(),
		a.instanceCmd(),
		a.gpuCmd(),
		a.statusCmd(),
		a.versionCmd(),
		a.doctorCmd(),
		a.setupCmd(),
		a.hookCmd(),
	)
	return root, a
}

func (a *app) client() *v1.Client {
	return v1.NewClient(a.socket, v1.WithTimeout(a.timeout), v1.WithUserAgent("cgpuctl/"+buildinfo.Version))
}

// outputFlag adds -o/--output to a read command.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "table", "output format: table or json")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
}

func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return usageError{fmt.Errorf("--output %q: want table or json", o)}
	}
	return nil
}

// args wraps cobra's positional-argument checks so that a wrong count is a
// usage error (exit 2).
func args(f cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := f(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// ctxOf returns the command's context (cobra leaves it nil when Execute,
// not ExecuteContext, ran it).
func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// groupHelp makes a command group runnable so that an unknown subcommand is
// a usage error (cobra only checks that on the root) and no subcommand
// prints the group's help.
func groupHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }
