package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
)

// nodeConfig writes a cgpud.toml with body; "" leaves no file.
func nodeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cgpud.toml")
	if body != "" {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// specBundle writes a bundle whose config.json is spec, with the given
// raw annotations when ann is not "".
func specBundle(t *testing.T, spec specs.Spec, ann string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if ann != "" {
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		m["annotations"] = json.RawMessage(ann)
		b, _ = json.Marshal(m)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	trusted   = `version = 1` + "\n" + `env_policy = "trusted"` + "\n"
	untrusted = `version = 1` + "\n" + `# the env is the tenant's` + "\n" + `env_policy = "untrusted"` + "\n"
)

// TestEnvPolicy: whose the environment is decides what it can do. Where it
// is the admin's (the default) it decides as the contract says; where it
// is the workload's, it can neither switch off nor change a slice an
// orchestrator assigned, and cannot switch off a slice it asks for while
// it holds GPU devices.
func TestEnvPolicy(t *testing.T) {
	gpu0 := &specs.Linux{Devices: []specs.LinuxDevice{{Path: "/dev/nvidiactl", Type: "c", Major: 195, Minor: 255}, {Path: "/dev/nvidia0", Type: "c", Major: 195}}}
	major := int64(195)
	all := &specs.Linux{Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Access: "rwm"}}}}
	ruleOnly := &specs.Linux{Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: &major, Access: "rw"}}}}
	renamed := &specs.Linux{Devices: []specs.LinuxDevice{{Path: "/dev/gpu0", Type: "c", Major: 195}}}
	noGPU := &specs.Linux{Devices: []specs.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}}
	nvHook := &specs.Hooks{Prestart: []specs.Hook{{Path: "/usr/bin/nvidia-container-runtime-hook", Args: []string{"nvidia-container-runtime-hook", "prestart"}}}}
	devMount := []specs.Mount{{Destination: "/dev", Source: "/dev", Type: "bind", Options: []string{"rbind"}}}
	assigned := `{"cgpu.io/memory":"4294967296","cgpu.io/gpus":"0"}`
	mem, disable, vis, nvvis, unit, weight := contract.EnvMem+"=", contract.EnvDisable+"=", contract.EnvVisible+"=", contract.EnvNVVisible+"=", contract.EnvMemUnit+"=", contract.EnvWeight+"="
	cg := "/system.slice/runc-abc.scope"
	slice := func(m uint64, gpus ...string) *v1.CreateRequest {
		return &v1.CreateRequest{ContainerID: "ctr1", Cgroup: cg, GPUs: gpus, Memory: m}
	}
	tests := []struct {
		name   string
		config string // cgpud.toml; "" none
		env    []string
		linux  *specs.Linux
		mounts []specs.Mount
		hooks  *specs.Hooks
		ann    string // raw annotations JSON
		want   *v1.CreateRequest
		err    string // with want nil and err "": skipped, daemon not contacted
	}{
		// The default: the env is the admin's, as before.
		{name: "no config: CGPU_DISABLE with GPU devices is obeyed", env: []string{mem + "4", disable + "1"}, linux: gpu0},
		{name: "trusted: CGPU_DISABLE with GPU devices is obeyed", config: trusted, env: []string{mem + "4", disable + "1"}, linux: gpu0},
		{name: "trusted: VISIBLE_DEVICES=none with GPU devices is obeyed", config: trusted, env: []string{mem + "4", vis + "none"}, linux: gpu0},
		{name: "trusted: annotations are not read, the env's size is made", config: trusted, env: []string{mem + "16"}, ann: assigned, want: slice(16 * gib2)},
		{name: "trusted: annotations are not read, the env's opt-out is obeyed", config: trusted, env: []string{disable + "1"}, ann: assigned, linux: gpu0},
		{name: "trusted: unreadable annotations are not read", config: trusted, env: []string{mem + "4"}, ann: `5`, want: slice(4 * gib2)},

		// untrusted, no assignment: the env still sizes the slice, but
		// cannot ask for one and switch it off while it has a GPU.
		{name: "untrusted: a slice the env asks for", config: untrusted, env: []string{mem + "4"}, linux: gpu0, want: slice(4 * gib2)},
		{name: "untrusted: CGPU_DISABLE with GPU devices", config: untrusted, env: []string{mem + "4", disable + "1"}, linux: gpu0,
			err: "CGPU_DISABLE=1 would run the container without the slice ALIYUN_COM_GPU_MEM_CONTAINER=4 asks for, while it has GPU access (device /dev/nvidiactl)"},
		{name: "untrusted: CGPU_DISABLE=true with GPU devices", config: untrusted, env: []string{mem + "4", disable + "true"}, linux: gpu0, err: "CGPU_DISABLE=true would run"},
		{name: "untrusted: ALIYUN VISIBLE_DEVICES=none with GPU devices", config: untrusted, env: []string{mem + "4", vis + "none"}, linux: gpu0, err: "ALIYUN_COM_GPU_VISIBLE_DEVICES=none would run"},
		{name: "untrusted: NVIDIA VISIBLE_DEVICES=void with GPU devices", config: untrusted, env: []string{mem + "4", nvvis + "void"}, linux: gpu0, err: "NVIDIA_VISIBLE_DEVICES=void would run"},
		{name: "untrusted: opt-out, a GPU node under another name", config: untrusted, env: []string{mem + "4", disable + "1"}, linux: renamed, err: "device /dev/gpu0"},
		{name: "untrusted: opt-out, every device allowed (privileged)", config: untrusted, env: []string{mem + "4", disable + "1"}, linux: all, err: "a device rule that allows major 195"},
		{name: "untrusted: opt-out, a rule for major 195", config: untrusted, env: []string{mem + "4", disable + "1"}, linux: ruleOnly, err: "a device rule that allows major 195"},
		{name: "untrusted: opt-out, /dev mounted", config: untrusted, env: []string{mem + "4", disable + "1"}, mounts: devMount, err: "a mount of /dev"},
		{name: "untrusted: opt-out, NVIDIA's hook gives the GPUs", config: untrusted, env: []string{mem + "4", vis + "none", nvvis + "0"}, hooks: nvHook,
			err: "NVIDIA's hook /usr/bin/nvidia-container-runtime-hook with NVIDIA_VISIBLE_DEVICES=0"},
		{name: "untrusted: opt-out, NVIDIA's hook with no GPU named", config: untrusted, env: []string{mem + "4", nvvis + "none"}, hooks: nvHook},
		{name: "untrusted: opt-out without GPU access", config: untrusted, env: []string{mem + "4", disable + "1"}, linux: noGPU},
		{name: "untrusted: CGPU_DISABLE without a slice asked", config: untrusted, env: []string{disable + "1"}, linux: gpu0},
		{name: "untrusted: a slice of 0 is no slice", config: untrusted, env: []string{mem + "0", vis + "none"}, linux: gpu0},

		// untrusted, assigned by an orchestrator: the assignment is made,
		// the env may repeat it and nothing else.
		{name: "untrusted: the assignment", config: untrusted, ann: assigned, linux: gpu0, want: slice(4*gib2, "0")},
		{name: "untrusted: the env repeats the size", config: untrusted, env: []string{mem + "4"}, ann: assigned, want: slice(4*gib2, "0")},
		{name: "untrusted: the env repeats the size in MiB", config: untrusted, env: []string{mem + "4096", unit + "MiB"}, ann: assigned, want: slice(4*gib2, "0")},
		{name: "untrusted: the env's device lists are not read", config: untrusted, env: []string{mem + "4", vis + "1", nvvis + "all"}, ann: assigned, want: slice(4*gib2, "0")},
		{name: "untrusted: the assignment's GPUs and weight", config: untrusted, env: []string{mem + "4", weight + "3"}, ann: `{"cgpu.io/memory":"4294967296","cgpu.io/gpus":"GPU-a,1","cgpu.io/weight":"3"}`,
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: cg, GPUs: []string{"GPU-a", "1"}, Memory: 4 * gib2, Weight: 3}},
		{name: "untrusted: a larger size in the env", config: untrusted, env: []string{mem + "16"}, ann: assigned,
			err: `ALIYUN_COM_GPU_MEM_CONTAINER=16 in the container's environment cannot change the slice an orchestrator assigned (cgpu.io/memory=4294967296); on this node (env_policy = "untrusted")`},
		{name: "untrusted: a size of 0 in the env", config: untrusted, env: []string{mem + "0"}, ann: assigned, err: "ALIYUN_COM_GPU_MEM_CONTAINER=0 in the container's environment cannot change"},
		{name: "untrusted: CGPU_DISABLE against an assignment", config: untrusted, env: []string{disable + "1"}, ann: assigned, err: "CGPU_DISABLE=1 in the container's environment cannot switch off the slice an orchestrator assigned"},
		{name: "untrusted: CGPU_DISABLE against an assignment, no GPU devices", config: untrusted, env: []string{mem + "4", disable + "1"}, ann: assigned, linux: noGPU, err: "cannot switch off"},
		{name: "untrusted: VISIBLE_DEVICES=none against an assignment", config: untrusted, env: []string{vis + "none"}, ann: assigned, err: "ALIYUN_COM_GPU_VISIBLE_DEVICES=none in the container's environment cannot switch off"},
		{name: "untrusted: NVIDIA_VISIBLE_DEVICES=void against an assignment", config: untrusted, env: []string{mem + "4", nvvis + "void"}, ann: assigned, err: "NVIDIA_VISIBLE_DEVICES=void in the container's environment cannot switch off"},
		{name: "untrusted: another weight in the env", config: untrusted, env: []string{mem + "4", weight + "9"}, ann: assigned, err: "ALIYUN_COM_GPU_SCHD_WEIGHT=9 in the container's environment cannot change"},
		{name: "untrusted: an assignment cgpu cannot read", config: untrusted, env: []string{mem + "4"}, ann: `{"cgpu.io/memory":"4GiB"}`, err: "annotation cgpu.io/memory=\"4GiB\""},
		{name: "untrusted: an unknown cgpu.io annotation", config: untrusted, ann: `{"cgpu.io/memory":"1","cgpu.io/disable":"true"}`, err: "annotation cgpu.io/disable: unknown"},
		{name: "untrusted: unreadable annotations", config: untrusted, env: []string{mem + "4"}, ann: `5`, err: "read the container's annotations"},

		// The policy is read only when it matters, and then must be
		// readable.
		{name: "bad config, not needed", config: "env_policy = ", env: []string{mem + "4"}, want: slice(4 * gib2)},
		{name: "bad config, needed", config: "env_policy = ", env: []string{mem + "4", disable + "1"}, linux: gpu0, err: "read env_policy from"},
		{name: "unknown policy", config: `env_policy = "orchestrated"`, ann: assigned, err: `env_policy = "orchestrated": "trusted" or "untrusted"`},
		{name: "other keys are cgpud's business", config: "version = 1\nlog_level = \"debug\"\nmax_connections = 7\n[future]\nx = 1\n", env: []string{mem + "4", disable + "1"}, linux: gpu0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := specBundle(t, specs.Spec{Version: "1.0.2", Process: &specs.Process{Args: []string{"sh"}, Env: tt.env}, Linux: tt.linux, Mounts: tt.mounts, Hooks: tt.hooks}, tt.ann)
			_, proc := bundle(t)
			f := &fakeDaemon{}
			contacted := false
			h := New(WithProcRoot(proc), WithConfigFile(nodeConfig(t, tt.config)), WithDaemon(func() Daemon { contacted = true; return f }))
			res, err := h.CreateRuntime(context.Background(), strings.NewReader(state("ctr1", 4242, dir, "creating")))
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate) || strings.Count(err.Error(), v1.ErrorPrefixCreate) != 1 || strings.Contains(err.Error(), "\n") {
					t.Errorf("want one line with the cGPU prefix once: %q", err)
				}
				if contacted {
					t.Error("daemon contacted for a refused container")
				}
			case err != nil:
				t.Fatal(err)
			case tt.want != nil:
				if len(f.creates) != 1 || !reflect.DeepEqual(f.creates[0], *tt.want) {
					t.Errorf("creates = %+v, want %+v", f.creates, *tt.want)
				}
			default:
				if contacted || res.Skipped == "" {
					t.Errorf("want skipped without the daemon; contacted %v, result %+v", contacted, res)
				}
			}
		})
	}
}

// TestEnvGivenTwice: a contract variable given twice with different values
// refuses the container, whichever value the runtime would let it see.
func TestEnvGivenTwice(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want *v1.CreateRequest
		err  string
	}{
		{name: "a second, larger size", env: []string{contract.EnvMem + "=4", "PATH=/bin", contract.EnvMem + "=16"},
			err: `ALIYUN_COM_GPU_MEM_CONTAINER is set twice with different values ("4" and "16")`},
		{name: "a second CGPU_DISABLE", env: []string{contract.EnvMem + "=4", contract.EnvDisable + "=0", contract.EnvDisable + "=1"}, err: "CGPU_DISABLE is set twice"},
		{name: "the same size twice", env: []string{contract.EnvMem + "=4", contract.EnvMem + "=4"},
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: "/system.slice/runc-abc.scope", Memory: 4 * gib2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, proc := bundle(t, tt.env...)
			f := &fakeDaemon{}
			h := New(WithProcRoot(proc), WithConfigFile(nodeConfig(t, "")), WithDaemon(func() Daemon { return f }))
			_, err := h.CreateRuntime(context.Background(), strings.NewReader(state("ctr1", 4242, dir, "creating")))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q with the cGPU prefix", err, tt.err)
				}
				if len(f.creates) != 0 {
					t.Errorf("created %+v", f.creates)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.creates) != 1 || !reflect.DeepEqual(f.creates[0], *tt.want) {
				t.Errorf("creates = %+v, want %+v", f.creates, *tt.want)
			}
		})
	}
}

// TestPoststopAssigned: a slice made from an assignment alone is removed
// too, although the environment asks for none.
func TestPoststopAssigned(t *testing.T) {
	dir := specBundle(t, specs.Spec{Version: "1.0.2", Process: &specs.Process{Args: []string{"sh"}}}, `{"cgpu.io/memory":"1073741824"}`)
	for _, tt := range []struct {
		config    string
		destroyed []string
	}{{untrusted, []string{"a"}}, {trusted, nil}} {
		f := &fakeDaemon{listed: []v1.Instance{{Name: "a", ContainerID: "ctr1"}}}
		h := New(WithConfigFile(nodeConfig(t, tt.config)), WithDaemon(func() Daemon { return f }))
		if _, err := h.Poststop(context.Background(), strings.NewReader(state("ctr1", 0, dir, "stopped"))); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.destroyed, tt.destroyed) {
			t.Errorf("%q: destroyed %v, want %v", tt.config, f.destroyed, tt.destroyed)
		}
	}
}
