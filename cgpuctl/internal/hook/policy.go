package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/cgpu-dev/cgpu/internal/contract"
)

// The node's env policy (contract.EnvPolicy) is the env_policy key of
// cgpud.toml, which the hook reads itself, rather than a setting of its
// own. The hook has no configuration file today: its settings are its
// command line (--socket, --timeout), written into three files by two
// programs (the CDI spec by cgpud at each start, the hooks.d file and the
// containerd base spec by cgpuctl setup), and a policy there could differ
// between them, or stay old in a spec a runtime cached. A hook-only file
// would be a second configuration file to find, ship and keep in step.
// cgpud.toml is the node's one configuration, root's, documented key by
// key, and cgpud checks the key at start and reload, so a typo stops the
// daemon with the key named rather than failing containers later. What
// it costs: env_policy is not a cgpud flag (the hook never sees cgpud's
// command line), and the hook reads the file at its default path. It
// reads it only when the answer matters (an orchestrator's annotation, or
// an opt-out in an environment that asks for a slice), and without a TOML
// library (envPolicyKey says why), so a container without a slice still
// costs no more than before.
const maxConfigFile = 1 << 20

// WithConfigFile sets where the node's configuration (cgpud.toml) is.
func WithConfigFile(p string) Option { return func(h *Hook) { h.configFile = p } }

// envPolicy reads env_policy from the node's configuration; a missing file
// or key is the default, EnvTrusted, as for cgpud.
func (h *Hook) envPolicy() (contract.EnvPolicy, error) {
	f, err := os.Open(h.configFile)
	if errors.Is(err, fs.ErrNotExist) {
		return contract.EnvTrusted, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s from the node's configuration: %w", contract.EnvPolicyKey, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err == nil && len(b) > maxConfigFile {
		err = fmt.Errorf("over %d bytes", maxConfigFile)
	}
	if err != nil {
		return "", fmt.Errorf("read %s from %s: %v", contract.EnvPolicyKey, h.configFile, err)
	}
	v, set, err := envPolicyKey(string(b))
	if err != nil {
		return "", fmt.Errorf("read %s from %s: %v", contract.EnvPolicyKey, h.configFile, err)
	}
	if !set {
		return contract.EnvTrusted, nil
	}
	p, err := contract.ParseEnvPolicy(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.configFile, err)
	}
	return p, nil
}

// decide says what the container asks of cgpu: the slice to make (want),
// or an error that refuses the container. Where the node's environment is
// the admin's, or nothing in the container depends on whose it is, that
// is what the environment says (contract.ParseEnv).
func (h *Hook) decide(spec bundleConfig) (contract.Request, bool, error) {
	req, want, err := contract.ParseEnv(spec.env())
	if err != nil {
		return req, false, err
	}
	var ann map[string]string
	annErr := json.Unmarshal(orNull(spec.Annotations), &ann)
	assigned := annErr != nil || contract.Assigned(ann)
	if !assigned && !(req.OptOut != "" && req.Asked) {
		return req, want, nil
	}
	policy, err := h.envPolicy()
	if err != nil {
		return req, false, err
	}
	if policy == contract.EnvTrusted {
		return req, want, nil
	}
	if assigned {
		if annErr != nil {
			return req, false, fmt.Errorf("read the container's annotations: %v", annErr)
		}
		return fromAssignment(req, ann)
	}
	dev, err := gpuAccess(spec)
	if err != nil {
		return req, false, err
	}
	if dev != "" {
		return req, false, fmt.Errorf("%s would run the container without the slice %s asks for, while it has GPU access (%s); on this node (%s = %q) a container's environment cannot switch cgpu off",
			req.OptOut, req.MemVar, dev, contract.EnvPolicyKey, contract.EnvUntrusted)
	}
	// It reaches no GPU: nothing to limit.
	return req, false, nil
}

// fromAssignment is the slice an orchestrator assigned, where the
// environment is the workload's: the environment may repeat the assigned
// memory and weight but not contradict them, nor switch cgpu off. The
// GPUs are the assignment's; the environment's device lists are not read
// (a CUDA image's NVIDIA_VISIBLE_DEVICES=all must not stop the container).
func fromAssignment(env contract.Request, ann map[string]string) (contract.Request, bool, error) {
	a, _, err := contract.ParseAssignment(ann)
	if err != nil {
		return a, false, err
	}
	refuse := func(what, verb string) (contract.Request, bool, error) {
		return a, false, fmt.Errorf("%s in the container's environment cannot %s the slice an orchestrator assigned (%s); on this node (%s = %q) the environment is the workload's",
			what, verb, a.MemVar, contract.EnvPolicyKey, contract.EnvUntrusted)
	}
	switch {
	case env.OptOut != "":
		return refuse(env.OptOut, "switch off")
	case env.MemVar != "" && env.Memory != a.Memory:
		return refuse(env.MemVar, "change")
	case env.Weight != 0 && env.Weight != a.Weight:
		return refuse(fmt.Sprintf("%s=%d", contract.EnvWeight, env.Weight), "change")
	}
	a.DevMemory = env.DevMemory
	return a, true, nil
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// nvidiaMajor is the character major of /dev/nvidiactl and /dev/nvidiaN
// (nvidia-uvm's is dynamic: it is known by its path).
const nvidiaMajor = 195

// gpuAccess names what gives the container a GPU according to its spec,
// "" if nothing does: a device node /dev/nvidia* (or of major 195), a
// device rule that lets it make one, a bind mount of one or of /dev, or
// NVIDIA's own hook (nvidia-container-runtime's legacy mode), which mounts
// the GPUs NVIDIA_VISIBLE_DEVICES names after this hook has run.
func gpuAccess(spec bundleConfig) (string, error) {
	var linux struct {
		Devices   []specs.LinuxDevice `json:"devices"`
		Resources *struct {
			Devices []specs.LinuxDeviceCgroup `json:"devices"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(orNull(spec.Linux), &linux); err != nil {
		return "", fmt.Errorf("read linux.devices of the bundle's config: %v", err)
	}
	for _, d := range linux.Devices {
		if strings.HasPrefix(d.Path, "/dev/nvidia") || (d.Type == "c" && d.Major == nvidiaMajor) {
			return "device " + d.Path, nil
		}
	}
	if linux.Resources != nil {
		for _, r := range linux.Resources.Devices {
			if r.Allow && (r.Type == "" || r.Type == "a" || r.Type == "c") && (r.Major == nil || *r.Major == -1 || *r.Major == nvidiaMajor) {
				return "a device rule that allows major 195", nil
			}
		}
	}
	var mounts []specs.Mount
	if err := json.Unmarshal(orNull(spec.Mounts), &mounts); err != nil {
		return "", fmt.Errorf("read mounts of the bundle's config: %v", err)
	}
	for _, m := range mounts {
		if m.Source == "/dev" || strings.HasPrefix(m.Source, "/dev/nvidia") || strings.HasPrefix(m.Destination, "/dev/nvidia") {
			return "a mount of " + m.Source, nil
		}
	}
	var hooks specs.Hooks
	if err := json.Unmarshal(orNull(spec.Hooks), &hooks); err != nil {
		return "", fmt.Errorf("read hooks of the bundle's config: %v", err)
	}
	nv := nvidiaVisible(spec.env())
	for _, stage := range [][]specs.Hook{hooks.Prestart, hooks.CreateRuntime, hooks.CreateContainer, hooks.StartContainer} {
		for _, hk := range stage {
			if strings.Contains(filepath.Base(hk.Path), "nvidia-container") && nv != "" {
				return fmt.Sprintf("NVIDIA's hook %s with %s", hk.Path, nv), nil
			}
		}
	}
	return "", nil
}

// nvidiaVisible is NVIDIA_VISIBLE_DEVICES=value when some value of it names
// a GPU, for NVIDIA's hook; "" otherwise.
func nvidiaVisible(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, contract.EnvNVVisible+"="); ok {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "", "none", "void":
			default:
				return kv
			}
		}
	}
	return ""
}
