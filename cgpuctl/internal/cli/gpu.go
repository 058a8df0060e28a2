package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

func (a *app) gpuCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "gpu",
		Aliases: []string{"gpus"},
		Short:   "Show the GPUs cgpud discovered",
		Args:    args(cobra.NoArgs),
		RunE:    groupHelp,
	}
	var out string
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List GPUs with their memory and slices",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			c := a.client()
			defer c.Close()
			g, err := c.GPUs(ctxOf(cmd))
			if err != nil {
				return err
			}
			if out == "json" {
				if g == nil {
					g = []v1.GPU{}
				}
				return writeJSON(a.Stdout, g)
			}
			return writeGPUs(a.Stdout, g)
		},
	}
	outputFlag(ls, &out)
	cmd.AddCommand(ls)
	return cmd
}

func writeGPUs(w io.Writer, gpus []v1.GPU) error {
	t := &table{}
	t.add("INDEX", "NAME", "UUID", "BUS-ID", "MEMORY(GiB)", "ALLOCATED(GiB)", "USED(GiB)", "INSTANCES")
	for _, g := range gpus {
		t.add(strconv.Itoa(g.Index), g.Name, g.UUID, g.BusID, gibString(g.MemoryTotal), gibString(g.MemoryAllocated),
			gibString(g.MemoryUsed), fmt.Sprintf("%d/%d", g.Instances, g.MaxInstances))
	}
	return t.write(w)
}
