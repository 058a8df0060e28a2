// Command cgpuctl is cgpu's admin CLI and OCI hook; see internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cgpu-dev/cgpu/cgpuctl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
