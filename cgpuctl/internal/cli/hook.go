package cli

import (
	"github.com/spf13/cobra"

	"github.com/cgpu-dev/cgpu/cgpuctl/internal/hook"
)

func (a *app) hookCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "OCI runtime hooks (run by the container runtime, not by hand)",
		Args:  args(cobra.NoArgs),
		RunE:  groupHelp,
		Long: `The OCI hooks container runtimes call, with the container state JSON on
stdin. create-runtime reads the bundle's config.json for the environment
contract (ALIYUN_COM_GPU_MEM_CONTAINER, ALIYUN_COM_GPU_MEM_UNIT,
ALIYUN_COM_GPU_MEM_DEV, ALIYUN_COM_GPU_VISIBLE_DEVICES or
NVIDIA_VISIBLE_DEVICES, ALIYUN_COM_GPU_SCHD_WEIGHT, CGPU_DISABLE) and asks
cgpud for a slice bound to the container's cgroup; without a slice asked for
it exits 0 at once. If the slice cannot be made it exits non-zero with the
reason, and the runtime does not start the container. poststop removes the
container's slices (idempotent). oci picks the stage from the state's status,
for hooks.d files that name one command for both.

A contract variable set twice with different values is refused. Where
/etc/cgpu/cgpud.toml says env_policy = "untrusted" (the environment is the
workload's), a slice an orchestrator assigned by the cgpu.io/memory
annotation is made as assigned and the environment can neither switch it off
nor change it, and a container whose environment asks for a slice and
switches it off while it holds GPU devices is refused.`,
	}
	newHook := func() *hook.Hook {
		return hook.New(hook.WithProcRoot(a.Paths.Proc), hook.WithConfigFile(a.Paths.Config), hook.WithDaemon(func() hook.Daemon { return a.client() }))
	}
	create := &cobra.Command{
		Use:     "create-runtime",
		Aliases: []string{"prestart", "createRuntime"},
		Short:   "createRuntime/prestart stage: make the container's slice",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := newHook().CreateRuntime(ctxOf(cmd), a.Stdin)
			return err
		},
	}
	poststop := &cobra.Command{
		Use:   "poststop",
		Short: "poststop stage: remove the container's slices",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := newHook().Poststop(ctxOf(cmd), a.Stdin)
			return err
		},
	}
	auto := &cobra.Command{
		Use:   "oci",
		Short: "either stage, chosen by the state's status (stopped: poststop)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := newHook().Auto(ctxOf(cmd), a.Stdin)
			return err
		},
	}
	cmd.AddCommand(create, poststop, auto)
	return cmd
}
