package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cgpu-dev/cgpu/internal/integration"
)

func (a *app) setupCmd() *cobra.Command {
	var gpuCount int
	var hookBinary string
	var noHooks, printContainerd bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Write the CDI spec and the OCI hooks file that plug cgpu into container runtimes",
		Long: `Write ` + integration.DefaultCDIDir + `/` + integration.CDIFile + ` (CDI kind ` + integration.CDIKind + `: one device per GPU
index and "all") and ` + integration.DefaultHooksDir + `/` + integration.HooksFile + `
(podman, CRI-O). The GPUs come from cgpud; --gpus N writes devices 0..N-1
(minor = index) without asking it. cgpud rewrites both files at start.
--containerd prints the containerd configuration to use instead.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printContainerd {
				_, err := fmt.Fprint(a.Stdout, integration.ContainerdSnippet(hookBinary))
				return err
			}
			var gpus []integration.GPU
			if gpuCount > 0 {
				for i := 0; i < gpuCount; i++ {
					gpus = append(gpus, integration.GPU{Index: i, Minor: uint32(i)})
				}
			} else {
				c := a.client()
				defer c.Close()
				l, err := c.GPUs(ctxOf(cmd))
				if err != nil {
					return fmt.Errorf("setup needs the GPU list: %w", err)
				}
				gpus = integration.FromAPI(l)
			}
			if len(gpus) == 0 {
				return errors.New("no GPUs to write devices for (cgpud found none; check `cgpuctl gpu ls`)")
			}
			hooksDir := a.Paths.HooksDir
			if noHooks {
				hooksDir = ""
			}
			written, err := integration.Write(gpus,
				integration.WithCDIDir(a.Paths.CDIDir), integration.WithHooksDir(hooksDir),
				integration.WithHookBinary(hookBinary))
			for _, p := range written {
				fmt.Fprintf(a.Stdout, "wrote %s\n", p)
			}
			return err
		},
	}
	def := a.Paths.HookBinary
	if exe, err := os.Executable(); err == nil && def == integration.DefaultHookBinary {
		if _, serr := os.Stat(def); serr != nil {
			def, _ = filepath.Abs(exe)
		}
	}
	f := cmd.Flags()
	f.IntVar(&gpuCount, "gpus", 0, "write devices for GPUs 0..N-1 without asking cgpud")
	f.StringVar(&hookBinary, "hook-binary", def, "the cgpuctl the hooks run")
	f.BoolVar(&noHooks, "no-hooks-file", false, "write only the CDI spec")
	f.BoolVar(&printContainerd, "containerd", false, "print the containerd configuration snippet and exit")
	f.StringVar(&a.Paths.CDIDir, "cdi-dir", a.Paths.CDIDir, "CDI spec directory")
	f.StringVar(&a.Paths.HooksDir, "hooks-dir", a.Paths.HooksDir, "OCI hooks.d directory")
	return cmd
}
