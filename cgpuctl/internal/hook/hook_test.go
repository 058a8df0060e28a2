package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
)

// fakeDaemon records calls; it is an in-memory Daemon.
type fakeDaemon struct {
	gpus      []v1.GPU
	creates   []v1.CreateRequest
	destroyed []string
	lists     []string
	createErr error
	listed    []v1.Instance
	gone      map[string]bool
}

func (f *fakeDaemon) GPUs(context.Context) ([]v1.GPU, error) { return f.gpus, nil }
func (f *fakeDaemon) CreateInstance(_ context.Context, r v1.CreateRequest) (v1.Instance, error) {
	f.creates = append(f.creates, r)
	if f.createErr != nil {
		return v1.Instance{}, f.createErr
	}
	in := v1.Instance{Name: "i-" + r.ContainerID, ContainerID: r.ContainerID, Cgroup: r.Cgroup, Memory: r.Memory}
	gs := r.GPUs
	if len(gs) == 0 {
		gs = []string{"1"} // placement's choice
	}
	for _, g := range gs {
		var idx int
		fmt.Sscan(g, &idx)
		in.GPUs = append(in.GPUs, v1.InstanceGPU{Index: idx})
	}
	return in, nil
}
func (f *fakeDaemon) ListInstances(_ context.Context, id string) ([]v1.Instance, error) {
	f.lists = append(f.lists, id)
	return f.listed, nil
}
func (f *fakeDaemon) DestroyInstance(_ context.Context, name string, force bool) error {
	if !force {
		return errors.New("poststop must force")
	}
	f.destroyed = append(f.destroyed, name)
	if f.gone[name] {
		return &v1.APIError{Status: 404, Err: v1.Error{Code: v1.CodeNotFound, Message: "gone"}}
	}
	return nil
}

// bundle writes a bundle with env and a /proc with pid 4242's cgroup.
func bundle(t *testing.T, env ...string) (dir, proc string) {
	t.Helper()
	dir = t.TempDir()
	b, _ := json.Marshal(specs.Spec{Version: "1.0.2", Process: &specs.Process{Args: []string{"sh"}, Env: env}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	proc = t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "4242", "cgroup"), []byte("0::/system.slice/runc-abc.scope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, proc
}

func state(id string, pid int, bundle, status string) string {
	b, _ := json.Marshal(State{Version: "1.0.2", ID: id, Pid: pid, Bundle: bundle, Status: specs.ContainerState(status)})
	return string(b)
}

const gib2 = uint64(1) << 30

func TestCreateRuntime(t *testing.T) {
	twoGPUs := []v1.GPU{{Index: 0, UUID: "GPU-a", MemoryTotal: 15 * gib2}, {Index: 1, UUID: "GPU-b", MemoryTotal: 7 * gib2}}
	tests := []struct {
		name      string
		env       []string
		gpus      []v1.GPU
		createErr error
		listed    []v1.Instance
		want      *v1.CreateRequest
		noDaemon  bool
		err       string
		destroyed []string
	}{
		{name: "no slice: daemon never contacted", env: []string{"PATH=/bin"}, noDaemon: true},
		{name: "disabled: daemon never contacted", env: []string{contract.EnvMem + "=4", contract.EnvDisable + "=true"}, noDaemon: true},
		{name: "slice", env: []string{contract.EnvMem + "=4", contract.EnvVisible + "=0", contract.EnvWeight + "=2"},
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: "/system.slice/runc-abc.scope", GPUs: []string{"0"}, Memory: 4 * gib2, Weight: 2}},
		{name: "placement", env: []string{contract.EnvMem + "=1"},
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: "/system.slice/runc-abc.scope", Memory: gib2}},
		{name: "all GPUs", env: []string{contract.EnvMem + "=1", contract.EnvNVVisible + "=all"}, gpus: twoGPUs,
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: "/system.slice/runc-abc.scope", GPUs: []string{"0", "1"}, Memory: gib2}},
		{name: "all GPUs, none there", env: []string{contract.EnvMem + "=1", contract.EnvNVVisible + "=all"}, err: v1.ErrorPrefixCreate + "the container asks for all GPUs and cgpud has none"},
		{name: "refused by the daemon: its message, prefixed once", env: []string{contract.EnvMem + "=4", contract.EnvVisible + "=0"},
			createErr: &v1.APIError{Status: 409, Err: v1.Error{Code: v1.CodeNoSpace, Message: v1.ErrorPrefixCreate + "GPU 0 already has 20 instances"}},
			err:       v1.ErrorPrefixCreate + "GPU 0 already has 20 instances"},
		{name: "bad env fails closed", env: []string{contract.EnvMem + "=4G"}, err: v1.ErrorPrefixCreate + `ALIYUN_COM_GPU_MEM_CONTAINER="4G": want a whole number of GiB`, noDaemon: true},
		{name: "already made (createRuntime and prestart both ran)", env: []string{contract.EnvMem + "=4", contract.EnvVisible + "=0"},
			createErr: &v1.APIError{Status: 409, Err: v1.Error{Code: v1.CodeConflict, Message: "cgroup taken"}},
			listed:    []v1.Instance{{Name: "i-ctr1", ContainerID: "ctr1", Cgroup: "/sys/fs/cgroup/system.slice/runc-abc.scope"}}},
		{name: "conflict with someone else", env: []string{contract.EnvMem + "=4", contract.EnvVisible + "=0"},
			createErr: &v1.APIError{Status: 409, Err: v1.Error{Code: v1.CodeConflict, Message: "name taken"}},
			err:       v1.ErrorPrefixCreate + "name taken"},
		{name: "card smaller than the scheduler saw", env: []string{contract.EnvMem + "=4", contract.EnvMemDev + "=8", contract.EnvVisible + "=1"}, gpus: twoGPUs,
			err: "GPU 1 has 7168 MiB but ALIYUN_COM_GPU_MEM_DEV says the scheduler counted 8192 MiB"},
		{name: "card as the scheduler saw", env: []string{contract.EnvMem + "=4", contract.EnvMemDev + "=15", contract.EnvVisible + "=GPU-a"}, gpus: twoGPUs,
			want: &v1.CreateRequest{ContainerID: "ctr1", Cgroup: "/system.slice/runc-abc.scope", GPUs: []string{"GPU-a"}, Memory: 4 * gib2}},
		{name: "placement chose a small card: slice taken back", env: []string{contract.EnvMem + "=4", contract.EnvMemDev + "=8"}, gpus: twoGPUs,
			err: "GPU 1 has 7168 MiB", destroyed: []string{"i-ctr1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, proc := bundle(t, tt.env...)
			f := &fakeDaemon{gpus: tt.gpus, createErr: tt.createErr, listed: tt.listed}
			h := New(WithProcRoot(proc), WithConfigFile(nodeConfig(t, "")), WithDaemon(func() Daemon {
				if tt.noDaemon {
					t.Error("daemon contacted for a container that asked for no slice")
				}
				return f
			}))
			res, err := h.CreateRuntime(context.Background(), strings.NewReader(state("ctr1", 4242, dir, "creating")))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if strings.Count(err.Error(), v1.ErrorPrefixCreate) != 1 {
					t.Errorf("want the cGPU prefix exactly once: %q", err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is more than one line: %q", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil {
				if len(f.creates) != 1 || !reflect.DeepEqual(f.creates[0], *tt.want) {
					t.Errorf("creates = %+v, want %+v", f.creates, *tt.want)
				}
				if res.Instance == nil {
					t.Error("no instance in the result")
				}
			}
			if tt.noDaemon && res.Skipped == "" && tt.err == "" {
				t.Error("result does not say it skipped")
			}
			if !reflect.DeepEqual(f.destroyed, tt.destroyed) {
				t.Errorf("destroyed %v, want %v", f.destroyed, tt.destroyed)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	good, proc := bundle(t, contract.EnvMem+"=4")
	badJSON := t.TempDir()
	os.WriteFile(filepath.Join(badJSON, "config.json"), []byte("{process: nope"), 0o644)
	noProc := t.TempDir()
	os.WriteFile(filepath.Join(noProc, "config.json"), []byte(`{"ociVersion":"1.0.2"}`), 0o644)
	v1proc := t.TempDir()
	os.MkdirAll(filepath.Join(v1proc, "7"), 0o755)
	os.WriteFile(filepath.Join(v1proc, "7", "cgroup"), []byte("12:memory:/docker/x\n1:name=systemd:/docker/x\n"), 0o644)
	tests := []struct {
		name, stdin, proc, err string
	}{
		{"empty stdin", "", proc, "no container state on stdin"},
		{"whitespace stdin", "  \n", proc, "no container state on stdin"},
		{"not JSON", "hello", proc, "container state on stdin is not the OCI state JSON"},
		{"JSON array", "[1,2]", proc, "not the OCI state JSON"},
		{"no id", `{"pid":4242,"bundle":"/x"}`, proc, "container state on stdin has no id"},
		{"pid a string", `{"id":"a","pid":"4242","bundle":"/x"}`, proc, "not the OCI state JSON"},
		{"oversize", `{"id":"a","x":"` + strings.Repeat("x", maxState) + `"}`, proc, "over 1048576 bytes"},
		{"no bundle", `{"id":"a","pid":4242}`, proc, "container state has no bundle"},
		{"missing bundle", state("a", 4242, "/nonexistent/bundle", "creating"), proc, "read the bundle's config: open /nonexistent/bundle"},
		{"relative bundle", state("a", 4242, "bundle", "creating"), proc, `bundle "bundle" is not an absolute path`},
		{"bad config.json", state("a", 4242, badJSON, "creating"), proc, "parse " + badJSON + "/config.json"},
		{"no pid", state("a", 0, good, "creating"), proc, "container state has no pid (0)"},
		{"pid gone", state("a", 999999, good, "creating"), proc, "read the container's cgroup"},
		{"cgroup v1", state("a", 7, good, "creating"), v1proc, "no cgroup v2 (\"0::\") line: cgpu needs the unified hierarchy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(WithProcRoot(tt.proc), WithDaemon(func() Daemon { t.Error("daemon contacted on bad input"); return &fakeDaemon{} }))
			_, err := h.CreateRuntime(context.Background(), strings.NewReader(tt.stdin))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
	t.Run("config.json over the bound", func(t *testing.T) {
		big := t.TempDir()
		pad := `{"process":{"env":["` + contract.EnvMem + `=4"]},"annotations":{"x":"` + strings.Repeat("x", maxConfig) + `"}}`
		if err := os.WriteFile(filepath.Join(big, "config.json"), []byte(pad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadEnv(big); err == nil || !strings.Contains(err.Error(), "over 16777216 bytes") {
			t.Errorf("err = %v, want the config bound", err)
		}
	})
	t.Run("a field outside process the hook does not read", func(t *testing.T) {
		odd := t.TempDir()
		cfg := `{"ociVersion":"1.0.2","linux":5,"mounts":"none","process":{"args":["sh"],"env":["A=1","` + contract.EnvMem + `=4"]}}`
		if err := os.WriteFile(filepath.Join(odd, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := ReadEnv(odd)
		if err != nil || !reflect.DeepEqual(env, []string{"A=1", contract.EnvMem + "=4"}) {
			t.Errorf("env %q, err %v", env, err)
		}
	})
	t.Run("config without process is no slice", func(t *testing.T) {
		h := New(WithProcRoot(proc), WithDaemon(func() Daemon { t.Error("daemon contacted"); return nil }))
		res, err := h.CreateRuntime(context.Background(), strings.NewReader(state("a", 4242, noProc, "creating")))
		if err != nil || res.Skipped == "" {
			t.Errorf("res %+v err %v", res, err)
		}
	})
}

// TestRandomStdin feeds random and mutated states: every outcome is a
// result or an error, never a panic.
func TestRandomStdin(t *testing.T) {
	dir, proc := bundle(t, contract.EnvMem+"=4")
	seed := state("ctr", 4242, dir, "creating")
	rng := rand.New(rand.NewSource(1))
	f := &fakeDaemon{}
	h := New(WithProcRoot(proc), WithDaemon(func() Daemon { return f }))
	for i := 0; i < 3000; i++ {
		var in []byte
		switch i % 3 {
		case 0:
			in = make([]byte, rng.Intn(200))
			rng.Read(in)
		case 1:
			in = []byte(seed)
			for n := rng.Intn(4) + 1; n > 0; n-- {
				in[rng.Intn(len(in))] = byte(rng.Intn(256))
			}
		default:
			in = []byte(seed[:rng.Intn(len(seed))])
		}
		for _, stage := range []func(context.Context, *strings.Reader) error{
			func(ctx context.Context, r *strings.Reader) error { _, err := h.CreateRuntime(ctx, r); return err },
			func(ctx context.Context, r *strings.Reader) error { _, err := h.Poststop(ctx, r); return err },
			func(ctx context.Context, r *strings.Reader) error { _, _, err := h.Auto(ctx, r); return err },
		} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic on stdin %q: %v", in, p)
					}
				}()
				_ = stage(context.Background(), strings.NewReader(string(in)))
			}()
		}
	}
}

func FuzzReadState(f *testing.F) {
	f.Add(state("ctr", 4242, "/b", "creating"))
	f.Add("")
	f.Add("{}")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ReadState(strings.NewReader(s))
		if err == nil && st.ID == "" {
			t.Errorf("accepted a state without id: %q", s)
		}
	})
}

func TestPoststop(t *testing.T) {
	tests := []struct {
		name      string
		env       []string
		noBundle  bool
		listed    []v1.Instance
		gone      map[string]bool
		destroyed []string
		noDaemon  bool
	}{
		{name: "removes the container's instances", env: []string{contract.EnvMem + "=4"},
			listed:    []v1.Instance{{Name: "a", ContainerID: "ctr1"}, {Name: "b", ContainerID: "ctr1"}, {Name: "other", ContainerID: "ctr2"}},
			destroyed: []string{"a", "b"}},
		{name: "nothing to remove", env: []string{contract.EnvMem + "=4"}},
		{name: "already gone is fine", env: []string{contract.EnvMem + "=4"}, listed: []v1.Instance{{Name: "a", ContainerID: "ctr1"}},
			gone: map[string]bool{"a": true}, destroyed: []string{"a"}},
		{name: "no slice asked: daemon not contacted", env: []string{"PATH=/bin"}, noDaemon: true},
		{name: "bundle gone: ask the daemon anyway", noBundle: true, listed: []v1.Instance{{Name: "a", ContainerID: "ctr1"}}, destroyed: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, proc := bundle(t, tt.env...)
			if tt.noBundle {
				dir = "/nonexistent"
			}
			f := &fakeDaemon{listed: tt.listed, gone: tt.gone}
			h := New(WithProcRoot(proc), WithDaemon(func() Daemon {
				if tt.noDaemon {
					t.Error("daemon contacted")
				}
				return f
			}))
			for run := 0; run < 2; run++ { // idempotent: a second run is fine too
				if _, err := h.Poststop(context.Background(), strings.NewReader(state("ctr1", 0, dir, "stopped"))); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
			if !tt.noDaemon && (len(f.lists) != 2 || f.lists[0] != "ctr1") {
				t.Errorf("lists = %v", f.lists)
			}
			want := append(append([]string(nil), tt.destroyed...), tt.destroyed...)
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(f.destroyed, want) {
				t.Errorf("destroyed %v, want %v", f.destroyed, want)
			}
		})
	}
}

func TestAutoStage(t *testing.T) {
	dir, proc := bundle(t, contract.EnvMem+"=4")
	f := &fakeDaemon{listed: []v1.Instance{{Name: "a", ContainerID: "c"}}}
	h := New(WithProcRoot(proc), WithDaemon(func() Daemon { return f }))
	for status, want := range map[string]string{"creating": "create-runtime", "created": "create-runtime", "stopped": "poststop"} {
		stage, _, err := h.Auto(context.Background(), strings.NewReader(state("c", 4242, dir, status)))
		if err != nil || stage != want {
			t.Errorf("status %s: stage %q err %v, want %q", status, stage, err, want)
		}
	}
	if len(f.creates) != 2 || len(f.destroyed) != 1 {
		t.Errorf("creates %d destroyed %d", len(f.creates), len(f.destroyed))
	}
}

// TestUnreachableDaemon: a slice asked for with no daemon fails closed with
// the hint to start it.
func TestUnreachableDaemon(t *testing.T) {
	dir, proc := bundle(t, contract.EnvMem+"=4")
	sock := filepath.Join(t.TempDir(), "none.sock")
	h := New(WithProcRoot(proc), WithDaemon(func() Daemon { return v1.NewClient(sock) }))
	_, err := h.CreateRuntime(context.Background(), strings.NewReader(state("c", 4242, dir, "creating")))
	if err == nil || !v1.IsUnreachable(err) || !strings.HasPrefix(err.Error(), v1.ErrorPrefixCreate+"cgpud is not running") {
		t.Fatalf("err = %v", err)
	}
}
