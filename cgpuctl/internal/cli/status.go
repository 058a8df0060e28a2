package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/buildinfo"
)

// statusReport is `cgpuctl status -o json`.
type statusReport struct {
	Socket    string     `json:"socket"`
	Version   v1.Version `json:"version"`
	Health    v1.Health  `json:"health"`
	Cgroup    string     `json:"cgroup_mode"`
	Instances int        `json:"instances"`
	GPUs      int        `json:"gpus"`
}

func (a *app) statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Daemon, module, driver, cgroup mode and instance count",
		Args:  args(cobra.NoArgs),
	}
	return withOutput(a, cmd, a.status, writeStatus)
}

func (a *app) status(ctx context.Context, c *v1.Client, _ []string) (statusReport, error) {
	r := statusReport{Socket: a.socket, Cgroup: a.cgroupMode()}
	var err error
	if r.Version, err = c.Version(ctx); err != nil {
		return r, err
	}
	if r.Health, err = c.Health(ctx); err != nil {
		return r, err
	}
	insts, err := c.ListInstances(ctx, "")
	if err != nil {
		return r, err
	}
	gpus, err := c.GPUs(ctx)
	if err != nil {
		return r, err
	}
	r.Instances, r.GPUs = len(insts), len(gpus)
	return r, nil
}

func writeStatus(w io.Writer, r statusReport) error {
	t := &table{}
	t.add("Daemon:", fmt.Sprintf("cgpud %s (API %s) on %s, %s", r.Version.Daemon, r.Version.API, r.Socket, r.Health.Status))
	if m := r.Version.Module; m != nil {
		t.add("Module:", fmt.Sprintf("cgpu.ko %s (ABI %d.%d, %d instances per GPU)", m.Version, m.ABIMajor, m.ABIMinor, m.MaxInst))
	} else {
		t.add("Module:", "not loaded (modprobe cgpu)")
	}
	drv := r.Version.Driver.Version
	if drv == "" {
		drv = "none"
	}
	if r.Version.Driver.Source != "" {
		drv += " (via " + r.Version.Driver.Source + ")"
	}
	t.add("Driver:", drv)
	t.add("Cgroup:", r.Cgroup)
	t.add("GPUs:", strconv.Itoa(r.GPUs))
	t.add("Instances:", strconv.Itoa(r.Instances))
	for _, c := range r.Health.Checks {
		if !c.OK {
			t.add("Problem:", c.Name+": "+c.Message)
		}
	}
	return t.write(w)
}

// cgroupMode names the hierarchy mounted at /sys/fs/cgroup.
func (a *app) cgroupMode() string {
	m, err := a.Statfs(a.Paths.Sys + "/fs/cgroup")
	switch {
	case err != nil:
		return "unknown (" + err.Error() + ")"
	case m == cgroup2Magic:
		return "v2 (unified)"
	case m == tmpfsMagic:
		return "v1 (legacy or hybrid; cgpu needs v2)"
	default:
		return fmt.Sprintf("unknown (filesystem magic %#x)", m)
	}
}

func (a *app) versionCmd() *cobra.Command {
	var out string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "cgpuctl's version and, if it answers, cgpud's",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			v := struct {
				Client string      `json:"client"`
				Daemon *v1.Version `json:"daemon,omitempty"`
			}{Client: buildinfo.Version}
			var derr error
			if !clientOnly {
				c := a.client()
				defer c.Close()
				dv, err := c.Version(ctxOf(cmd))
				if err == nil {
					v.Daemon = &dv
				}
				derr = err
			}
			if out == "json" {
				if err := writeJSON(a.Stdout, v); err != nil {
					return err
				}
				return derr
			}
			fmt.Fprintf(a.Stdout, "cgpuctl: %s\n", v.Client)
			if v.Daemon != nil {
				fmt.Fprintf(a.Stdout, "cgpud:   %s (API %s)\n", v.Daemon.Daemon, v.Daemon.API)
				if v.Daemon.Module != nil {
					fmt.Fprintf(a.Stdout, "cgpu.ko: %s\n", v.Daemon.Module.Version)
				}
				if v.Daemon.Driver.Version != "" {
					fmt.Fprintf(a.Stdout, "driver:  %s\n", v.Daemon.Driver.Version)
				}
			}
			return derr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "only cgpuctl's own version (no daemon needed)")
	outputFlag(cmd, &out)
	return cmd
}
