package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

func (a *app) instanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "instance",
		Aliases: []string{"instances", "inst"},
		Short:   "Create, resize, remove and list GPU memory slices",
		Args:    args(cobra.NoArgs),
		RunE:    groupHelp,
	}
	cmd.AddCommand(a.instanceCreateCmd(), a.instanceResizeCmd(), a.instanceRmCmd(),
		a.instanceLsCmd(), a.instanceShowCmd())
	return cmd
}

func (a *app) instanceCreateCmd() *cobra.Command {
	var req v1.CreateRequest
	var mem string
	var gpus []string
	var weight uint32
	cmd := &cobra.Command{
		Use:   "create --container ID --cgroup PATH --memory SIZE [--gpu N]...",
		Short: "Create a slice bound to a container's cgroup",
		Long: `Create a slice of --memory (a bare number is GiB; 512MiB, 4GiB also work)
on each --gpu (index or UUID; none: the daemon's placement picks one), bound to
the cgroup v2 --cgroup (absolute under /sys/fs/cgroup or relative to it).`,
		Args: args(cobra.NoArgs),
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "instance name (default: derived from the container id)")
	f.StringVar(&req.ContainerID, "container", "", "container id the slice belongs to")
	f.StringVar(&req.Cgroup, "cgroup", "", "the container's cgroup v2 path")
	f.StringVar(&mem, "memory", "", "memory per GPU (4 = 4 GiB; 512MiB, 4GiB)")
	f.StringSliceVar(&gpus, "gpu", nil, "GPU index or UUID (repeat or comma-separate for several)")
	f.Uint32Var(&weight, "weight", 0, "compute weight 1..max_inst (default 1)")
	f.StringVar(&req.Placement, "placement", "", "binpack or spread, when no --gpu is given")
	for _, r := range []string{"container", "cgroup", "memory"} {
		_ = cmd.MarkFlagRequired(r)
	}
	return withOutput(a, cmd, func(ctx context.Context, c *v1.Client, _ []string) (v1.Instance, error) {
		n, err := parseSize(mem)
		if err != nil {
			return v1.Instance{}, usageError{fmt.Errorf("--memory: %w", err)}
		}
		req.Memory, req.Weight = n, weight
		for _, g := range gpus {
			for _, f := range strings.Split(g, ",") {
				if f = strings.TrimSpace(f); f != "" {
					req.GPUs = append(req.GPUs, f)
				}
			}
		}
		return c.CreateInstance(ctx, req)
	}, func(w io.Writer, in v1.Instance) error {
		_, err := fmt.Fprintf(w, "created %s: %s GiB on GPU %s\n", in.Name, gibString(in.Memory), instanceGPUs(in))
		return err
	})
}

func (a *app) instanceResizeCmd() *cobra.Command {
	var mem string
	var weight uint32
	cmd := &cobra.Command{
		Use:   "resize NAME [--memory SIZE] [--weight N]",
		Short: "Change a slice's memory limit or weight",
		Args:  args(cobra.ExactArgs(1)),
	}
	f := cmd.Flags()
	f.StringVar(&mem, "memory", "", "new memory per GPU (4 = 4 GiB; 512MiB, 4GiB)")
	f.Uint32Var(&weight, "weight", 0, "new compute weight")
	return withOutput(a, cmd, func(ctx context.Context, c *v1.Client, argv []string) (v1.Instance, error) {
		var req v1.ResizeRequest
		if f.Changed("memory") {
			n, err := parseSize(mem)
			if err != nil {
				return v1.Instance{}, usageError{fmt.Errorf("--memory: %w", err)}
			}
			req.Memory = &n
		}
		if f.Changed("weight") {
			req.Weight = &weight
		}
		if req.Memory == nil && req.Weight == nil {
			return v1.Instance{}, usageError{errors.New("resize: give --memory, --weight or both")}
		}
		return c.ResizeInstance(ctx, argv[0], req)
	}, func(w io.Writer, in v1.Instance) error {
		_, err := fmt.Fprintf(w, "resized %s: %s GiB, weight %d\n", in.Name, gibString(in.Memory), in.Weight)
		return err
	})
}

func (a *app) instanceRmCmd() *cobra.Command {
	var force, ignoreMissing bool
	cmd := &cobra.Command{
		Use:     "rm NAME...",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove slices",
		Long: `Remove slices. An instance whose processes still hold GPU memory is
refused (busy) unless --force. A missing instance exits 4 unless
--ignore-missing.`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c := a.client()
			defer c.Close()
			var first error
			for _, name := range argv {
				err := c.DestroyInstance(ctxOf(cmd), name, force)
				switch {
				case err == nil:
					fmt.Fprintf(a.Stdout, "removed %s\n", name)
				case ignoreMissing && v1.IsNotFound(err):
				case v1.IsBusy(err):
					err = fmt.Errorf("%s: %w (its processes hold GPU memory; stop them or use --force)", name, err)
					fallthrough
				default:
					if v1.IsUnreachable(err) {
						return err
					}
					if first == nil {
						first = err
					} else {
						fmt.Fprintf(a.Stderr, "cgpuctl: %s\n", oneLine(err.Error()))
					}
				}
			}
			return first
		},
		ValidArgsFunction: a.completeInstances,
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "remove even while its processes hold GPU memory")
	cmd.Flags().BoolVar(&ignoreMissing, "ignore-missing", false, "a missing instance is not an error")
	return cmd
}

func (a *app) instanceLsCmd() *cobra.Command {
	var container string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List slices",
		Args:    args(cobra.NoArgs),
	}
	cmd.Flags().StringVar(&container, "container", "", "only this container's slices")
	return withOutput(a, cmd, func(ctx context.Context, c *v1.Client, _ []string) ([]v1.Instance, error) {
		return list(c.ListInstances(ctx, container))
	}, writeInstanceList)
}

func writeInstanceList(w io.Writer, l []v1.Instance) error {
	t := &table{}
	t.add("NAME", "CONTAINER", "GPUS", "MEMORY(GiB)", "USED(GiB)", "WEIGHT", "STATE", "CREATED")
	for _, in := range sortedInstances(l) {
		var used uint64
		for _, g := range in.GPUs {
			used += g.Used
		}
		t.add(in.Name, shortID(in.ContainerID), instanceGPUs(in), gibString(in.Memory), gibString(used),
			strconv.FormatUint(uint64(in.Weight), 10), in.State, created(in.Created))
	}
	return t.write(w)
}

func (a *app) instanceShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "show NAME",
		Aliases:           []string{"get"},
		Short:             "Show one slice and its per-GPU counters",
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeInstances,
	}
	return withOutput(a, cmd, func(ctx context.Context, c *v1.Client, argv []string) (v1.Instance, error) {
		return c.GetInstance(ctx, argv[0])
	}, writeInstance)
}

func writeInstance(w io.Writer, in v1.Instance) error {
	kv := &table{}
	kv.add("Name:", in.Name)
	kv.add("Container:", in.ContainerID)
	kv.add("Cgroup:", fmt.Sprintf("%s (id %d)", in.Cgroup, in.CgroupID))
	kv.add("Memory:", gibString(in.Memory)+" GiB per GPU")
	kv.add("Weight:", strconv.FormatUint(uint64(in.Weight), 10))
	kv.add("State:", in.State)
	if in.Reason != "" {
		kv.add("Reason:", in.Reason)
	}
	kv.add("Created:", created(in.Created))
	if err := kv.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := &table{}
	t.add("GPU", "UUID", "KERNEL-ID", "USED(GiB)", "PEAK(GiB)", "ALLOCS", "REFUSED", "REFUSED-MANAGED", "PROCESSES")
	for _, g := range in.GPUs {
		t.add(strconv.Itoa(g.Index), g.UUID, strconv.FormatUint(g.KernelID, 10), gibString(g.Used), gibString(g.Peak),
			strconv.FormatUint(g.Allocs, 10), strconv.FormatUint(g.RefusedAllocs, 10),
			strconv.FormatUint(g.RefusedManaged, 10), strconv.FormatUint(uint64(g.Processes), 10))
	}
	return t.write(w)
}

func instanceGPUs(in v1.Instance) string {
	if len(in.GPUs) == 0 {
		return "-"
	}
	s := make([]string, len(in.GPUs))
	for i, g := range in.GPUs {
		s[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(s, ",")
}

func created(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// completeInstances offers instance names from the daemon (nothing if it is
// not answering).
func (a *app) completeInstances(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	c := a.client()
	defer c.Close()
	l, err := c.ListInstances(ctxOf(cmd), "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(l))
	for i, in := range l {
		names[i] = in.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
