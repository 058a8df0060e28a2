package cli

import (
	"context"
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
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List GPUs with their memory and slices",
		Args:    args(cobra.NoArgs),
	}
	cmd.AddCommand(withOutput(a, ls, func(ctx context.Context, c *v1.Client, _ []string) ([]v1.GPU, error) {
		return list(c.GPUs(ctx))
	}, writeGPUs))
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
