// Package integration writes the files that plug cgpu's OCI hook into
// container runtimes: a CDI spec (podman, CRI-O, containerd with CDI) and an
// OCI hooks.d file (podman, CRI-O). cgpud writes them at start and
// `cgpuctl setup` on demand.
package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	specs "tags.cncf.io/container-device-interface/specs-go"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
)

// Where the files go and what the hooks call.
const (
	DefaultCDIDir     = "/etc/cdi"
	CDIFile           = "cgpu.yaml"
	DefaultHooksDir   = "/usr/share/containers/oci/hooks.d"
	HooksFile         = "cgpu.json"
	DefaultHookBinary = "/usr/bin/cgpuctl"
	DefaultDevDir     = "/dev"
)

// The CDI kind: "cgpu.io/gpu", so `--device cgpu.io/gpu=0` asks for GPU 0
// with cgpu's hooks. Our own vendor name keeps clear of nvidia.com/gpu
// (NVIDIA's spec, which may sit beside ours) and of aliyun.com, which is not
// ours to claim.
const (
	CDIVendor = "cgpu.io"
	CDIClass  = "gpu"
	CDIKind   = CDIVendor + "/" + CDIClass
	// CDIAll is the device that gives every GPU.
	CDIAll = "all"
)

// GPU is what the files need of a GPU.
type GPU struct {
	Index int
	Minor uint32 // /dev/nvidia<minor>
}

// Config says where the files go and what the hooks run.
type Config struct {
	CDIDir     string
	HooksDir   string
	HookBinary string
	// DevDir is the host's /dev; device nodes in the spec are under it.
	DevDir string
}

// Option changes Config.
type Option func(*Config)

// WithCDIDir sets the CDI spec directory.
func WithCDIDir(d string) Option { return func(c *Config) { c.CDIDir = d } }

// WithHooksDir sets the hooks.d directory ("" skips the hooks file).
func WithHooksDir(d string) Option { return func(c *Config) { c.HooksDir = d } }

// WithHookBinary sets the cgpuctl the hooks run.
func WithHookBinary(p string) Option { return func(c *Config) { c.HookBinary = p } }

// WithDevDir sets the host's /dev.
func WithDevDir(d string) Option { return func(c *Config) { c.DevDir = d } }

func newConfig(opts []Option) Config {
	c := Config{CDIDir: DefaultCDIDir, HooksDir: DefaultHooksDir, HookBinary: DefaultHookBinary, DevDir: DefaultDevDir}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Hook arguments: argv[0] is the program name as runc passes it.
func createArgs() []string   { return []string{"cgpuctl", "hook", "create-runtime"} }
func poststopArgs() []string { return []string{"cgpuctl", "hook", "poststop"} }
func autoArgs() []string     { return []string{"cgpuctl", "hook", "oci"} }

// CDISpec builds the spec: one device per GPU index and "all". Every device
// brings /dev/nvidiactl and /dev/nvidia-uvm, the createRuntime and poststop
// hooks (spec-wide edits, applied once whatever the number of devices), its
// /dev/nvidia<minor> and CGPU_CDI_GPU_<index>=<index>, which tells the hook
// which GPUs the container got. Device numbers are left to the runtime,
// which reads them from the host's nodes (nvidia-uvm's major is dynamic).
// The version is the lowest the content needs, so older runtimes
// (Debian 12's podman) read it.
func CDISpec(gpus []GPU, opts ...Option) (*specs.Spec, error) {
	c := newConfig(opts)
	if len(gpus) == 0 {
		return nil, errors.New("CDI spec: no GPUs")
	}
	gs := append([]GPU(nil), gpus...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Index < gs[j].Index })
	node := func(name string) *specs.DeviceNode {
		n := &specs.DeviceNode{Path: "/dev/" + name}
		if c.DevDir != DefaultDevDir {
			n.HostPath = filepath.Join(c.DevDir, name)
		}
		return n
	}
	spec := &specs.Spec{
		Kind: CDIKind,
		ContainerEdits: specs.ContainerEdits{
			DeviceNodes: []*specs.DeviceNode{node("nvidiactl"), node("nvidia-uvm")},
			Hooks: []*specs.Hook{
				{HookName: "createRuntime", Path: c.HookBinary, Args: createArgs()},
				{HookName: "poststop", Path: c.HookBinary, Args: poststopArgs()},
			},
		},
	}
	all := specs.Device{Name: CDIAll}
	for _, g := range gs {
		idx := strconv.Itoa(g.Index)
		env := contract.EnvCDIGPUPrefix + idx + "=" + idx
		n := node("nvidia" + strconv.FormatUint(uint64(g.Minor), 10))
		spec.Devices = append(spec.Devices, specs.Device{
			Name:           idx,
			ContainerEdits: specs.ContainerEdits{Env: []string{env}, DeviceNodes: []*specs.DeviceNode{n}},
		})
		all.ContainerEdits.Env = append(all.ContainerEdits.Env, env)
		all.ContainerEdits.DeviceNodes = append(all.ContainerEdits.DeviceNodes, node("nvidia"+strconv.FormatUint(uint64(g.Minor), 10)))
	}
	spec.Devices = append(spec.Devices, all)
	v, err := specs.MinimumRequiredVersion(spec)
	if err != nil {
		return nil, fmt.Errorf("CDI spec version: %w", err)
	}
	spec.Version = v
	return spec, nil
}

// MarshalCDISpec renders a spec as the YAML written to /etc/cdi/cgpu.yaml.
func MarshalCDISpec(s *specs.Spec) ([]byte, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode CDI spec: %w", err)
	}
	return append([]byte("# Written by cgpu (cgpud at start, or `cgpuctl setup`); edits are overwritten.\n"), b...), nil
}

// ValidateCDIFile loads a spec file the way runtimes do (the CDI library's
// parser and validation).
func ValidateCDIFile(path string) error {
	s, err := cdi.ReadSpec(path, 0)
	if err != nil {
		return err
	}
	if s.Kind != CDIKind {
		return fmt.Errorf("kind %q, want %q", s.Kind, CDIKind)
	}
	return nil
}

// hooksFile is oci-hooks(5), version 1.0.0.
type hooksFile struct {
	Version string    `json:"version"`
	Hook    hooksHook `json:"hook"`
	When    hooksWhen `json:"when"`
	Stages  []string  `json:"stages"`
}

type hooksHook struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
}

type hooksWhen struct {
	Always *bool `json:"always,omitempty"`
}

// HooksJSON is the hooks.d file. oci-hooks(5) 1.0.0 can match annotations,
// commands and bind mounts but not the environment, so the hook runs for
// every container (`always`) and returns at once, without contacting the
// daemon, when ALIYUN_COM_GPU_MEM_CONTAINER is not set. One file holds one
// command for both stages: `cgpuctl hook oci` tells them apart by the
// state's status. prestart, not createRuntime, because it is the stage every
// hooks.d reader knows; runc runs both at the same point, after the
// container's cgroup is set up.
func HooksJSON(opts ...Option) ([]byte, error) {
	c := newConfig(opts)
	always := true
	b, err := json.MarshalIndent(hooksFile{
		Version: "1.0.0",
		Hook:    hooksHook{Path: c.HookBinary, Args: autoArgs()},
		When:    hooksWhen{Always: &always},
		Stages:  []string{"prestart", "poststop"},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ValidateHooks checks a hooks.d file is one cgpu would write: version
// 1.0.0, an absolute hook path, a condition, and known stages.
func ValidateHooks(b []byte) error {
	var h struct {
		Version string          `json:"version"`
		Hook    *hooksHook      `json:"hook"`
		When    json.RawMessage `json:"when"`
		Stages  []string        `json:"stages"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if h.Version != "1.0.0" {
		return fmt.Errorf("version %q, want 1.0.0", h.Version)
	}
	if h.Hook == nil || !filepath.IsAbs(h.Hook.Path) {
		return errors.New("hook.path must be an absolute path")
	}
	if len(h.When) == 0 || string(h.When) == "{}" || string(h.When) == "null" {
		return errors.New("when: no condition (oci-hooks(5) requires one)")
	}
	if len(h.Stages) == 0 {
		return errors.New("stages: none")
	}
	known := map[string]bool{"prestart": true, "createRuntime": true, "createContainer": true, "startContainer": true, "poststart": true, "poststop": true}
	for _, s := range h.Stages {
		if !known[s] {
			return fmt.Errorf("stages: unknown stage %q", s)
		}
	}
	return nil
}

// Write writes the CDI spec and the hooks file (unless HooksDir is ""),
// each validated before it replaces the old one, and returns the paths
// written.
func Write(gpus []GPU, opts ...Option) ([]string, error) {
	c := newConfig(opts)
	spec, err := CDISpec(gpus, opts...)
	if err != nil {
		return nil, err
	}
	y, err := MarshalCDISpec(spec)
	if err != nil {
		return nil, err
	}
	var written []string
	cdiPath := filepath.Join(c.CDIDir, CDIFile)
	if err := writeValidated(cdiPath, y, 0o644, ValidateCDIFile); err != nil {
		return nil, err
	}
	written = append(written, cdiPath)
	if c.HooksDir == "" {
		return written, nil
	}
	hj, err := HooksJSON(opts...)
	if err != nil {
		return written, err
	}
	hooksPath := filepath.Join(c.HooksDir, HooksFile)
	if err := writeValidated(hooksPath, hj, 0o644, func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return ValidateHooks(b)
	}); err != nil {
		return written, err
	}
	return append(written, hooksPath), nil
}

// writeValidated writes b beside path, validates the copy and renames it
// over path, so a runtime never reads a half-written or invalid file. The
// temporary name ends in .tmp, which CDI's directory scan ignores.
func writeValidated(path string, b []byte, mode os.FileMode, validate func(string) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := validate(tmp); err != nil {
		return fmt.Errorf("generated %s is invalid: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}

// FromAPI converts the daemon's GPU list, for callers that have one (cgpud
// at start: integration.Write(integration.FromAPI(gpus), ...)).
func FromAPI(gpus []v1.GPU) []GPU {
	out := make([]GPU, len(gpus))
	for i, g := range gpus {
		out[i] = GPU{Index: g.Index, Minor: g.Minor}
	}
	return out
}
