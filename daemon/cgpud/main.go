// Command cgpud is the cgpu node daemon; see internal/daemon.
package main

import (
	"os"

	"github.com/cgpu-dev/cgpu/daemon/internal/daemon"
)

func main() {
	os.Exit(daemon.Main(os.Args[1:], os.Stdout, os.Stderr))
}
