package integration

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
)

func twoGPUs() []GPU { return []GPU{{Index: 1, Minor: 3}, {Index: 0, Minor: 0}} }

// TestWriteValidatesWithCDI writes the files and loads the spec with the CDI
// library's cache, the way podman and containerd find it.
func TestWriteValidatesWithCDI(t *testing.T) {
	cdiDir, hooksDir := t.TempDir(), t.TempDir()
	written, err := Write(twoGPUs(), WithCDIDir(cdiDir), WithHooksDir(hooksDir), WithHookBinary("/opt/cgpu/cgpuctl"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(cdiDir, CDIFile), filepath.Join(hooksDir, HooksFile)}
	if !reflect.DeepEqual(written, want) {
		t.Errorf("written %v, want %v", written, want)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(cdiDir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	if errs := cache.GetErrors(); len(errs) != 0 {
		t.Fatalf("CDI errors: %v", errs)
	}
	got := cache.ListDevices()
	sort.Strings(got)
	wantDevs := []string{"cgpu.io/gpu=0", "cgpu.io/gpu=1", "cgpu.io/gpu=all"}
	if !reflect.DeepEqual(got, wantDevs) {
		t.Errorf("devices %v, want %v", got, wantDevs)
	}
	if err := ValidateCDIFile(want[0]); err != nil {
		t.Error(err)
	}
	b, err := os.ReadFile(want[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateHooks(b); err != nil {
		t.Error(err)
	}
	left, _ := filepath.Glob(filepath.Join(cdiDir, "*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestInjection applies devices to an OCI spec with the CDI library: the
// hooks, the device nodes and the variables that tell the hook which GPUs.
// The library lstat()s each host node, so for a test without root the nodes'
// host paths are pointed at /dev/null after generation.
func TestInjection(t *testing.T) {
	spec, err := CDISpec(twoGPUs(), WithDevDir("/hostdev"), WithHookBinary("/usr/bin/cgpuctl"))
	if err != nil {
		t.Fatal(err)
	}
	nodes := spec.ContainerEdits.DeviceNodes
	for _, d := range spec.Devices {
		nodes = append(nodes, d.ContainerEdits.DeviceNodes...)
	}
	for _, n := range nodes {
		if !strings.HasPrefix(n.HostPath, "/hostdev/nvidia") {
			t.Errorf("node %s: host path %q not under the dev dir", n.Path, n.HostPath)
		}
		n.HostPath = "/dev/null"
	}
	y, err := MarshalCDISpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	cdiDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cdiDir, CDIFile), y, 0o644); err != nil {
		t.Fatal(err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(cdiDir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		devices []string
		env     []string
		nodes   []string
	}{
		{[]string{"cgpu.io/gpu=1"}, []string{contract.EnvCDIGPUPrefix + "1=1"}, []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia3"}},
		{[]string{"cgpu.io/gpu=0", "cgpu.io/gpu=1"}, []string{contract.EnvCDIGPUPrefix + "0=0", contract.EnvCDIGPUPrefix + "1=1"},
			[]string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia3"}},
		{[]string{"cgpu.io/gpu=all"}, []string{contract.EnvCDIGPUPrefix + "0=0", contract.EnvCDIGPUPrefix + "1=1"},
			[]string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia3"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.devices, ","), func(t *testing.T) {
			spec := &oci.Spec{Process: &oci.Process{Env: []string{"PATH=/bin", contract.EnvMem + "=4"}}, Linux: &oci.Linux{}}
			if unresolved, err := cache.InjectDevices(spec, tt.devices...); err != nil {
				t.Fatalf("inject: %v (unresolved %v)", err, unresolved)
			}
			for _, e := range tt.env {
				if !contains(spec.Process.Env, e) {
					t.Errorf("env %v lacks %s", spec.Process.Env, e)
				}
			}
			var nodes []string
			for _, d := range spec.Linux.Devices {
				nodes = append(nodes, d.Path)
			}
			sort.Strings(nodes)
			want := append([]string(nil), tt.nodes...)
			sort.Strings(want)
			if !reflect.DeepEqual(nodes, want) {
				t.Errorf("device nodes %v, want %v", nodes, want)
			}
			if spec.Hooks == nil || len(spec.Hooks.CreateRuntime) != 1 || len(spec.Hooks.Poststop) != 1 {
				t.Fatalf("hooks %+v: want one createRuntime and one poststop", spec.Hooks)
			}
			if h := spec.Hooks.CreateRuntime[0]; h.Path != "/usr/bin/cgpuctl" || strings.Join(h.Args, " ") != "cgpuctl hook create-runtime" {
				t.Errorf("createRuntime hook %+v", h)
			}
			if h := spec.Hooks.Poststop[0]; strings.Join(h.Args, " ") != "cgpuctl hook poststop" {
				t.Errorf("poststop hook %+v", h)
			}
			// What the hook will read from this spec.
			req, asked, err := contract.ParseEnv(spec.Process.Env)
			if err != nil || !asked {
				t.Fatalf("hook reads %+v, %v, %v", req, asked, err)
			}
			if len(req.GPUs) != len(tt.env) {
				t.Errorf("hook sees GPUs %v", req.GPUs)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestCDISpecVersionAndErrors(t *testing.T) {
	s, err := CDISpec(twoGPUs())
	if err != nil {
		t.Fatal(err)
	}
	// The lowest version the content needs, so older runtimes accept it;
	// device names that start with a digit need 0.5.0.
	if s.Version != "0.5.0" {
		t.Errorf("cdiVersion %s, want 0.5.0", s.Version)
	}
	if s.Devices[0].Name != "0" || s.Devices[2].Name != CDIAll {
		t.Errorf("devices not sorted with all last: %+v", s.Devices)
	}
	if _, err := CDISpec(nil); err == nil {
		t.Error("a spec without GPUs must be refused")
	}
	if _, err := Write(nil, WithCDIDir(t.TempDir())); err == nil {
		t.Error("Write without GPUs must fail")
	}
}

func TestValidateHooks(t *testing.T) {
	good, err := HooksJSON(WithHookBinary("/usr/bin/cgpuctl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateHooks(good); err != nil {
		t.Fatalf("our own file: %v", err)
	}
	tests := map[string]string{
		"not JSON":      "{",
		"old version":   `{"version":"0.1.0","hook":{"path":"/x"},"when":{"always":true},"stages":["prestart"]}`,
		"relative path": `{"version":"1.0.0","hook":{"path":"cgpuctl"},"when":{"always":true},"stages":["prestart"]}`,
		"no when":       `{"version":"1.0.0","hook":{"path":"/x"},"stages":["prestart"]}`,
		"empty when":    `{"version":"1.0.0","hook":{"path":"/x"},"when":{},"stages":["prestart"]}`,
		"no stages":     `{"version":"1.0.0","hook":{"path":"/x"},"when":{"always":true}}`,
		"bad stage":     `{"version":"1.0.0","hook":{"path":"/x"},"when":{"always":true},"stages":["prestop"]}`,
	}
	for name, in := range tests {
		if err := ValidateHooks([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestContainerdSnippet(t *testing.T) {
	s := ContainerdSnippet("/opt/bin/cgpuctl")
	for _, w := range []string{"enable_cdi = true", "base_runtime_spec", `"path": "/opt/bin/cgpuctl", "args": ["cgpuctl", "hook", "create-runtime"]`, `"cgpuctl", "hook", "poststop"`} {
		if !strings.Contains(s, w) {
			t.Errorf("snippet lacks %q", w)
		}
	}
	if strings.Contains(s, "@HOOK@") {
		t.Error("placeholder left in the snippet")
	}
}

func TestFromAPI(t *testing.T) {
	got := FromAPI([]v1.GPU{{Index: 0, Minor: 2, UUID: "GPU-a"}, {Index: 1, Minor: 0}})
	want := []GPU{{Index: 0, Minor: 2}, {Index: 1, Minor: 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromAPI = %+v, want %+v", got, want)
	}
}
