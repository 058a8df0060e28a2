package cli

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/cgpu-dev/cgpu/internal/contract"
	"github.com/cgpu-dev/cgpu/internal/integration"
)

// Paths are the host paths cgpuctl reads and writes; tests root them in a
// fixture tree.
type Paths struct {
	Proc       string // /proc
	Sys        string // /sys
	CDIDir     string // /etc/cdi
	HooksDir   string // /usr/share/containers/oci/hooks.d
	KubeletDir string // /var/lib/kubelet
	// Config is the node's configuration, cgpud's file: the hook reads its
	// env_policy there.
	Config string // /etc/cgpu/cgpud.toml
	// HookBinary is the cgpuctl the generated hooks call.
	HookBinary string
}

// DefaultPaths are the real host's.
func DefaultPaths() Paths {
	return Paths{
		Proc:       "/proc",
		Sys:        "/sys",
		CDIDir:     integration.DefaultCDIDir,
		HooksDir:   integration.DefaultHooksDir,
		KubeletDir: "/var/lib/kubelet",
		Config:     contract.ConfigFile,
		HookBinary: integration.DefaultHookBinary,
	}
}

// Under returns the default paths below root (HookBinary unchanged: it is a
// path inside the host the hooks run on).
func Under(root string) Paths {
	p := DefaultPaths()
	p.Proc = filepath.Join(root, p.Proc)
	p.Sys = filepath.Join(root, p.Sys)
	p.CDIDir = filepath.Join(root, p.CDIDir)
	p.HooksDir = filepath.Join(root, p.HooksDir)
	p.KubeletDir = filepath.Join(root, p.KubeletDir)
	p.Config = filepath.Join(root, p.Config)
	return p
}

func statfsMagic(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}
