package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/config"
	"github.com/cgpu-dev/cgpu/internal/buildinfo"
)

// Main is cgpud's command line; it returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	loader, err := config.Parse("cgpud", args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "cgpud: %v\n", err)
		return 2
	}
	if loader.ShowVersion {
		fmt.Fprintf(stdout, "cgpud %s (API %s)\n", buildinfo.Version, v1.APIVersion)
		return 0
	}
	log := NewLogger(stderr)
	if err := New(loader, log).Run(context.Background()); err != nil {
		log.WithError(err).Error("cgpud failed")
		return 1
	}
	return 0
}
