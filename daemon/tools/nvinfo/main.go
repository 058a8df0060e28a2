// Command nvinfo lists the GPUs a driver exposes, found without NVML: from
// the driver's procfs and its RM ABI (the same path cgpud falls back to).
// It runs static in the VM guest against nvmock.ko.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/cgpu-dev/cgpu/daemon/internal/nvrm"
)

func main() {
	proc := flag.String("proc", "/proc", "procfs root")
	dev := flag.String("dev", "/dev", "device directory holding nvidiactl")
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: nvinfo [-json] [-proc DIR] [-dev DIR]\n\nLists GPUs from the NVIDIA driver's procfs and RM ABI.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	version, gpus, err := nvrm.Discover(*proc, *dev)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nvinfo: %v\n", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Driver string     `json:"driver_version"`
			GPUs   []nvrm.GPU `json:"gpus"`
		}{version, gpus})
		return
	}
	fmt.Printf("driver %s, %d GPU(s)\n", version, len(gpus))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INDEX\tMINOR\tBUS\tNAME\tUUID\tTOTAL(MiB)\tFREE(MiB)")
	for _, g := range gpus {
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%d\t%d\n", g.Index, g.Minor, g.BusID, g.Name, g.UUID,
			g.MemoryTotal>>20, g.MemoryFree>>20)
	}
	w.Flush()
}
