package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// daemonCall is what a command asks of cgpud, with its arguments.
type daemonCall[T any] func(ctx context.Context, c *v1.Client, argv []string) (T, error)

// withOutput gives cmd -o/--output and the RunE every command that asks
// the daemon one thing and prints the answer shares: check -o, open a
// client, call, then print the answer as JSON (-o json) or with text.
func withOutput[T any](a *app, cmd *cobra.Command, call daemonCall[T], text func(io.Writer, T) error) *cobra.Command {
	var out string
	outputFlag(cmd, &out)
	cmd.RunE = func(cmd *cobra.Command, argv []string) error {
		if err := checkOutput(out); err != nil {
			return err
		}
		c := a.client()
		defer c.Close()
		v, err := call(ctxOf(cmd), c, argv)
		if err != nil {
			return err
		}
		if out == "json" {
			return writeJSON(a.Stdout, v)
		}
		return text(a.Stdout, v)
	}
	return cmd
}

// list makes a nil list an empty one, so that -o json prints [] for none.
func list[E any](l []E, err error) ([]E, error) {
	if l == nil && err == nil {
		l = []E{}
	}
	return l, err
}
