package integration

import "strings"

// ContainerdSnippet is the containerd configuration that runs cgpu's hooks:
// CDI where containerd has it (1.7+), else a base runtime spec that carries
// the hooks (1.6, Debian 12's), for the CRI plugin; `ctr run` users pass the
// hooks in their own spec.
func ContainerdSnippet(hookBinary string) string {
	if hookBinary == "" {
		hookBinary = DefaultHookBinary
	}
	return strings.ReplaceAll(containerdSnippet, "@HOOK@", hookBinary)
}

const containerdSnippet = `# containerd 1.7 and later: CDI. In /etc/containerd/config.toml (version 2):
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
# then ask for "cgpu.io/gpu=0" (a CDI device) in the pod, e.g. through the
# device plugin's CDI annotation, with ALIYUN_COM_GPU_MEM_CONTAINER set.

# containerd 1.6 (no CDI): a base OCI spec that carries cgpu's hooks, for the
# runc runtime of the CRI plugin.
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  base_runtime_spec = "/etc/containerd/cgpu-base-spec.json"
# /etc/containerd/cgpu-base-spec.json is containerd's default spec
# (` + "`ctr oci spec`" + `) with this "hooks" member added:
#   "hooks": {
#     "createRuntime": [{"path": "@HOOK@", "args": ["cgpuctl", "hook", "create-runtime"]}],
#     "poststop":      [{"path": "@HOOK@", "args": ["cgpuctl", "hook", "poststop"]}]
#   }
# The hook returns at once for containers without ALIYUN_COM_GPU_MEM_CONTAINER.
`
