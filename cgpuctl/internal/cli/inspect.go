package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// inspectRule is the fixed dashed line ACK prints under the node rows.
var inspectRule = strings.Repeat("-", 66)

func (a *app) inspectCmd() *cobra.Command {
	var details bool
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "GPU memory allocated per GPU on this node, as ACK's `kubectl inspect cgpu` prints it",
		Long: `Print the node's GPU memory allocation in the layout of ACK's
"kubectl inspect cgpu": one column per GPU (Allocated/Total, GiB), the node's
sum, then the cluster line. -d adds one row per instance and GPU: name,
container, GPU, memory limit, used, peak and process count.`,
		Args: args(cobra.NoArgs),
	}
	cmd.Flags().BoolVarP(&details, "details", "d", false, "one row per instance: name, container, GPU, memory, used, peak, processes")
	return withOutput(a, cmd, func(ctx context.Context, c *v1.Client, _ []string) (v1.Inspect, error) {
		return c.Inspect(ctx)
	}, func(w io.Writer, in v1.Inspect) error {
		if err := writeInspect(w, in); err != nil {
			return err
		}
		if details {
			fmt.Fprintln(w)
			return writeInstanceRows(w, in.Instances)
		}
		return nil
	})
}

// writeInspect prints the ACK table. NAME and IPADDRESS are at least 12 and
// 14 wide so that a short node lines up as in ACK's output.
func writeInspect(w io.Writer, in v1.Inspect) error {
	gpus := append([]v1.InspectGPU(nil), in.GPUs...)
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	addr := in.Address
	if addr == "" {
		addr = "unknown"
	}
	node := in.Node
	if node == "" {
		node = "unknown"
	}
	t := &table{minWidth: []int{12, 14}}
	head := []string{"NAME", "IPADDRESS"}
	row := []string{node, addr}
	var alloc, total uint64
	for _, g := range gpus {
		head = append(head, "GPU"+strconv.Itoa(g.Index)+"(Allocated/Total)")
		row = append(row, gibString(g.Allocated)+"/"+gibString(g.Total))
		alloc += g.Allocated
		total += g.Total
	}
	t.add(append(head, "GPU Memory(GiB)")...)
	t.add(append(row, gibString(alloc)+"/"+gibString(total))...)
	if err := t.write(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s\nAllocated/Total GPU Memory In Cluster:\n%s/%s (%d%%)\n",
		inspectRule, gibString(alloc), gibString(total), percent(alloc, total))
	return err
}

// writeInstanceRows prints one row per instance and GPU (an instance that
// spans GPUs has a row on each, since used and peak are per GPU).
func writeInstanceRows(w io.Writer, insts []v1.Instance) error {
	t := &table{}
	t.add("NAME", "CONTAINER", "GPU", "MEMORY(GiB)", "USED(GiB)", "PEAK(GiB)", "PROCESSES")
	for _, in := range sortedInstances(insts) {
		if len(in.GPUs) == 0 {
			t.add(in.Name, shortID(in.ContainerID), "-", gibString(in.Memory), "-", "-", "-")
			continue
		}
		for _, g := range in.GPUs {
			t.add(in.Name, shortID(in.ContainerID), strconv.Itoa(g.Index), gibString(in.Memory),
				gibString(g.Used), gibString(g.Peak), strconv.FormatUint(uint64(g.Processes), 10))
		}
	}
	return t.write(w)
}

func sortedInstances(insts []v1.Instance) []v1.Instance {
	s := append([]v1.Instance(nil), insts...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	return s
}
