package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const g = uint64(1) << 30

var created0 = time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)

// fixture is the daemon state the fake serves: two 15 GiB GPUs, a 4 GiB
// and an 8 GiB... as in docs/design.md's example, 9/15 and 3/15.
func fixture() (v1.Inspect, []v1.GPU, v1.Version, v1.Health) {
	insts := []v1.Instance{
		{Name: "web-1", ContainerID: "0123456789abcdef0123", Cgroup: "/kubepods/pod1/web", CgroupID: 4242, Memory: 4 * g, Weight: 1,
			State: v1.StateReady, Created: created0,
			GPUs: []v1.InstanceGPU{{Index: 0, UUID: "GPU-aaaa", KernelID: 1, Used: 3 * g / 2, Peak: 2 * g, Allocs: 7, RefusedAllocs: 1, Processes: 2}}},
		{Name: "train", ContainerID: "fedcba9876543210", Cgroup: "/kubepods/pod2/train", CgroupID: 4243, Memory: 5 * g, Weight: 2,
			State: v1.StateReady, Created: created0.Add(time.Minute),
			GPUs: []v1.InstanceGPU{{Index: 0, UUID: "GPU-aaaa", KernelID: 2, Used: 5 * g, Peak: 5 * g, Processes: 1, RefusedManaged: 3}}},
		{Name: "small", ContainerID: "c3", Cgroup: "/c3", Memory: 3 * g, Weight: 1, State: v1.StateReady, Created: created0.Add(2 * time.Minute),
			GPUs: []v1.InstanceGPU{{Index: 1, UUID: "GPU-bbbb", KernelID: 1, Used: g / 4, Peak: g / 2}}},
	}
	in := v1.Inspect{Node: "node-a", Address: "192.0.2.10",
		GPUs:      []v1.InspectGPU{{Index: 1, Allocated: 3 * g, Total: 15 * g, Used: g / 4}, {Index: 0, Allocated: 9 * g, Total: 15 * g, Used: 13 * g / 2}},
		Instances: insts}
	gpus := []v1.GPU{
		{Index: 0, Minor: 0, UUID: "GPU-aaaa", Name: "NVIDIA T4 (mock)", BusID: "0000:01:00.0", MemoryTotal: 15 * g, MemoryAllocated: 9 * g, MemoryUsed: 13 * g / 2, Instances: 2, MaxInstances: 20},
		{Index: 1, Minor: 1, UUID: "GPU-bbbb", Name: "NVIDIA T4 (mock)", BusID: "0000:41:00.0", MemoryTotal: 15 * g, MemoryAllocated: 3 * g, MemoryUsed: g / 4, Instances: 1, MaxInstances: 20},
	}
	ver := v1.Version{Daemon: "1.0.0-test", API: "v1", Module: &v1.Module{Version: "1.0.0", ABIMajor: 1, ABIMinor: 0, MaxInst: 20},
		Driver: v1.Driver{Version: "595.45.04", Source: "procfs"}}
	h := v1.Health{Status: "ok", Checks: []v1.Check{{Name: "module", OK: true}}}
	return in, gpus, ver, h
}

// fakeDaemon serves the fixture on a Unix socket, the way cgpud does.
type fakeDaemon struct {
	socket string
	mu     sync.Mutex
	reqs   []string
	bodies []string
	health v1.Health
	// deleted are instance names already removed (for idempotence tests).
	deleted map[string]bool
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "cgpucli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeDaemon{socket: filepath.Join(dir, "d.sock"), deleted: map[string]bool{}}
	in, gpus, ver, h := fixture()
	f.health = h
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func(w http.ResponseWriter, name string) {
		reply(w, 404, v1.Error{Code: v1.CodeNotFound, Message: "instance " + name + ": not found"})
	}
	find := func(name string) (v1.Instance, bool) {
		for _, i := range in.Instances {
			if i.Name == name && !f.deleted[name] {
				return i, true
			}
		}
		return v1.Instance{}, false
	}
	mux.HandleFunc("GET /v1/version", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, ver) })
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		hh := f.health
		f.mu.Unlock()
		st := 200
		if hh.Status != "ok" {
			st = 503
		}
		reply(w, st, hh)
	})
	mux.HandleFunc("GET /v1/gpus", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, gpus) })
	mux.HandleFunc("GET /v1/inspect", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, in) })
	mux.HandleFunc("GET /v1/instances", func(w http.ResponseWriter, r *http.Request) {
		out := []v1.Instance{}
		for _, i := range in.Instances {
			if c := r.URL.Query().Get("container"); (c == "" || c == i.ContainerID) && !f.deleted[i.Name] {
				out = append(out, i)
			}
		}
		reply(w, 200, out)
	})
	mux.HandleFunc("GET /v1/instances/{name}", func(w http.ResponseWriter, r *http.Request) {
		if i, ok := find(r.PathValue("name")); ok {
			reply(w, 200, i)
			return
		}
		notFound(w, r.PathValue("name"))
	})
	mux.HandleFunc("POST /v1/instances", func(w http.ResponseWriter, r *http.Request) {
		var cr v1.CreateRequest
		if err := json.NewDecoder(r.Body).Decode(&cr); err != nil {
			reply(w, 400, v1.Error{Code: v1.CodeBadRequest, Message: err.Error()})
			return
		}
		if cr.Memory > 15*g {
			reply(w, 409, v1.Error{Code: v1.CodeNoSpace, Message: v1.ErrorPrefixCreate + "GPU 0 has 6 GiB free, 16 GiB asked"})
			return
		}
		reply(w, 201, v1.Instance{Name: "new-1", ContainerID: cr.ContainerID, Cgroup: cr.Cgroup, Memory: cr.Memory, State: v1.StateReady,
			GPUs: []v1.InstanceGPU{{Index: 1}}})
	})
	mux.HandleFunc("PATCH /v1/instances/{name}", func(w http.ResponseWriter, r *http.Request) {
		i, ok := find(r.PathValue("name"))
		if !ok {
			notFound(w, r.PathValue("name"))
			return
		}
		var rr v1.ResizeRequest
		_ = json.NewDecoder(r.Body).Decode(&rr)
		if rr.Memory != nil {
			i.Memory = *rr.Memory
		}
		if rr.Weight != nil {
			i.Weight = *rr.Weight
		}
		reply(w, 200, i)
	})
	mux.HandleFunc("DELETE /v1/instances/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if _, ok := find(name); !ok {
			notFound(w, name)
			return
		}
		if name == "train" && r.URL.Query().Get("force") != "1" {
			reply(w, 409, v1.Error{Code: v1.CodeBusy, Message: "instance train: busy: 1 process holds 5 GiB"})
			return
		}
		f.mu.Lock()
		f.deleted[name] = true
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+r.URL.RequestURI())
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *fakeDaemon) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs cgpuctl with the fake's socket and a fixture host.
func run(t *testing.T, socket string, stdin string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	root, _ := filepath.Abs("testdata/host")
	env := map[string]string{EnvSocket: socket}
	code := Main(context.Background(), argv,
		WithIO(strings.NewReader(stdin), &out, &errb),
		WithGetenv(func(k string) string { return env[k] }),
		WithPaths(Under(root)),
		WithStatfs(func(p string) (int64, error) {
			switch filepath.Base(p) {
			case "cgroup":
				return cgroup2Magic, nil
			case "bpf":
				return bpffsMagic, nil
			}
			return 0, os.ErrNotExist
		}))
	return result{code, out.String(), errb.String()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", p, got, want)
	}
}

func TestTables(t *testing.T) {
	f := newFakeDaemon(t)
	tests := []struct {
		golden string
		argv   []string
	}{
		{"inspect", []string{"inspect"}},
		{"inspect-d", []string{"inspect", "-d"}},
		{"instance-ls", []string{"instance", "ls"}},
		{"instance-show", []string{"instance", "show", "web-1"}},
		{"gpu-ls", []string{"gpu", "ls"}},
		{"status", []string{"status"}},
		{"doctor", []string{"doctor"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			r := run(t, f.socket, "", tt.argv...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			root, _ := filepath.Abs("testdata/host")
			out := strings.ReplaceAll(r.stdout, f.socket, "SOCKET")
			golden(t, tt.golden, strings.ReplaceAll(out, root, "ROOT"))
		})
	}
}

// designDoc is the design document, whose inspect example is the contract
// with ACK's users.
const designDoc = "../../../docs/design.md"

// designInspectExample returns the first fenced block under the "The
// inspect table" heading of docs/design.md.
func designInspectExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(designDoc)
	if err != nil {
		t.Fatalf("the design document holds the inspect example: %v", err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The inspect table\n")
	if !ok {
		t.Fatalf("%s has no \"## The inspect table\" section", designDoc)
	}
	if next := strings.Index(sec, "\n## "); next >= 0 {
		sec = sec[:next]
	}
	_, block, ok := strings.Cut(sec, "\n```\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		t.Fatalf("%s: no fenced block in \"The inspect table\"", designDoc)
	}
	return block + "\n"
}

// TestInspectMatchesDesign checks the table against docs/design.md's
// example literally: the layout is a contract with ACK's users.
func TestInspectMatchesDesign(t *testing.T) {
	in, _, _, _ := fixture()
	var b bytes.Buffer
	if err := writeInspect(&b, in); err != nil {
		t.Fatal(err)
	}
	want := designInspectExample(t)
	if b.String() != want {
		t.Errorf("got\n%s\nwant (%s)\n%s", b.String(), designDoc, want)
	}
}

func TestInspectFigures(t *testing.T) {
	tests := []struct {
		name string
		gpus []v1.InspectGPU
		want []string
	}{
		{"fractions", []v1.InspectGPU{{Index: 0, Allocated: 3 * g / 2, Total: 15*g + 768<<20}}, []string{"1.5/15.75", "(9%)"}},
		{"empty node", nil, []string{"NAME        IPADDRESS     GPU Memory(GiB)", "0/0 (0%)"}},
		{"full", []v1.InspectGPU{{Index: 0, Allocated: 16 * g, Total: 16 * g}}, []string{"16/16 (100%)"}},
		{"long node name widens the column", nil, []string{"cn-beijing.192.168.1.105  192.0.2.10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := "n"
			if strings.HasPrefix(tt.name, "long") {
				node = "cn-beijing.192.168.1.105"
			}
			var b bytes.Buffer
			if err := writeInspect(&b, v1.Inspect{Node: node, Address: "192.0.2.10", GPUs: tt.gpus}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.HasSuffix(line, " ") {
					t.Errorf("trailing space in %q", line)
				}
			}
		})
	}
}

func TestJSONOutput(t *testing.T) {
	f := newFakeDaemon(t)
	in, gpus, ver, _ := fixture()
	tests := []struct {
		argv []string
		into func() any
		want any
	}{
		{[]string{"inspect", "-o", "json"}, func() any { return &v1.Inspect{} }, &in},
		{[]string{"inspect", "-d", "-o", "json"}, func() any { return &v1.Inspect{} }, &in},
		{[]string{"gpu", "ls", "-o", "json"}, func() any { return &[]v1.GPU{} }, &gpus},
		{[]string{"instance", "ls", "-o", "json"}, func() any { return &[]v1.Instance{} }, &in.Instances},
		{[]string{"instance", "show", "train", "-o", "json"}, func() any { return &v1.Instance{} }, &in.Instances[1]},
		{[]string{"version", "-o", "json"}, func() any {
			return &struct {
				Client string      `json:"client"`
				Daemon *v1.Version `json:"daemon"`
			}{}
		}, &struct {
			Client string      `json:"client"`
			Daemon *v1.Version `json:"daemon"`
		}{"0.0.0-dev", &ver}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			r := run(t, f.socket, "", tt.argv...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			got := tt.into()
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(got); err != nil {
				t.Fatalf("not the wire JSON: %v\n%s", err, r.stdout)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("got %s\nwant %s", gj, wj)
			}
		})
	}
	t.Run("status and doctor are JSON", func(t *testing.T) {
		for _, argv := range [][]string{{"status", "-o", "json"}, {"doctor", "-o", "json"}} {
			r := run(t, f.socket, "", argv...)
			if r.code != 0 || !json.Valid([]byte(r.stdout)) {
				t.Errorf("%v: exit %d, output %q", argv, r.code, r.stdout)
			}
		}
	})
}

func TestExitCodes(t *testing.T) {
	f := newFakeDaemon(t)
	dead := filepath.Join(filepath.Dir(f.socket), "nobody.sock")
	tests := []struct {
		name    string
		socket  string
		argv    []string
		code    int
		errHas  string
		outHas  string
		reqWant string
	}{
		{"ok", f.socket, []string{"gpu", "ls"}, ExitOK, "", "GPU-aaaa", "GET /v1/gpus"},
		{"unknown command", f.socket, []string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`, "", ""},
		{"unknown flag", f.socket, []string{"inspect", "--nope"}, ExitUsage, "unknown flag: --nope", "", ""},
		{"bad output", f.socket, []string{"gpu", "ls", "-o", "yaml"}, ExitUsage, `--output "yaml": want table or json`, "", ""},
		{"extra arg", f.socket, []string{"inspect", "x"}, ExitUsage, "unknown command", "", ""},
		{"show needs a name", f.socket, []string{"instance", "show"}, ExitUsage, "accepts 1 arg", "", ""},
		{"create needs flags", f.socket, []string{"instance", "create", "--memory", "4"}, ExitUsage, "required flag", "", ""},
		{"bad size", f.socket, []string{"instance", "create", "--container", "c", "--cgroup", "/c", "--memory", "4 parsecs"}, ExitUsage, "unknown unit", "", ""},
		{"resize needs a change", f.socket, []string{"instance", "resize", "web-1"}, ExitUsage, "give --memory, --weight or both", "", ""},
		{"daemon down", dead, []string{"inspect"}, ExitUnreachable, "cgpud is not running at " + dead, "", ""},
		{"not found", f.socket, []string{"instance", "show", "ghost"}, ExitNotFound, "instance ghost: not found", "", "GET /v1/instances/ghost"},
		{"rm not found", f.socket, []string{"instance", "rm", "ghost"}, ExitNotFound, "not found", "", ""},
		{"rm ignore missing", f.socket, []string{"instance", "rm", "--ignore-missing", "ghost"}, ExitOK, "", "", "DELETE /v1/instances/ghost"},
		{"rm busy says --force", f.socket, []string{"instance", "rm", "train"}, ExitError, "use --force", "", "DELETE /v1/instances/train"},
		{"rm force", f.socket, []string{"instance", "rm", "-f", "train"}, ExitOK, "", "removed train", "DELETE /v1/instances/train?force=1"},
		{"create refused", f.socket, []string{"instance", "create", "--container", "c", "--cgroup", "/c", "--memory", "16GiB"}, ExitError, v1.ErrorPrefixCreate, "", "POST /v1/instances"},
		{"create", f.socket, []string{"instance", "create", "--container", "c", "--cgroup", "/c", "--memory", "512MiB", "--gpu", "1"}, ExitOK, "", "created new-1: 0.5 GiB on GPU 1", "POST /v1/instances"},
		{"resize", f.socket, []string{"instance", "resize", "web-1", "--memory", "6"}, ExitOK, "", "resized web-1: 6 GiB, weight 1", "PATCH /v1/instances/web-1"},
		{"version without daemon", dead, []string{"version", "--client"}, ExitOK, "", "cgpuctl: 0.0.0-dev", ""},
		{"version, daemon down", dead, []string{"version"}, ExitUnreachable, "systemctl start cgpud", "cgpuctl: 0.0.0-dev", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.socket, "", tt.argv...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if tt.errHas != "" && !strings.Contains(r.stderr, tt.errHas) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.errHas)
			}
			if tt.errHas == "" && r.stderr != "" {
				t.Errorf("unexpected stderr %q", r.stderr)
			}
			if tt.code != ExitOK && tt.code != ExitUsage {
				if lines := strings.Count(strings.TrimSpace(r.stderr), "\n"); lines != 0 {
					t.Errorf("error is %d lines, want one: %q", lines+1, r.stderr)
				}
			}
			if tt.outHas != "" && !strings.Contains(r.stdout, tt.outHas) {
				t.Errorf("stdout %q lacks %q", r.stdout, tt.outHas)
			}
			if tt.reqWant != "" {
				reqs := f.requests()
				if len(reqs) == 0 || reqs[len(reqs)-1] != tt.reqWant {
					t.Errorf("last request %v, want %q", reqs, tt.reqWant)
				}
			}
		})
	}
}

func TestCreateRequestBody(t *testing.T) {
	f := newFakeDaemon(t)
	r := run(t, f.socket, "", "instance", "create", "--name", "x", "--container", "c", "--cgroup", "/c",
		"--memory", "4", "--gpu", "0,GPU-bbbb", "--weight", "2", "--placement", "spread")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f.mu.Lock()
	body := f.bodies[len(f.bodies)-1]
	f.mu.Unlock()
	want := `{"name":"x","container_id":"c","cgroup":"/c","gpus":["0","GPU-bbbb"],"memory":4294967296,"weight":2,"placement":"spread"}`
	if body != want {
		t.Errorf("body %s\nwant %s", body, want)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  bool
	}{
		{"4", 4 * g, false}, {"4GiB", 4 * g, false}, {"4g", 4 * g, false}, {"512MiB", 512 << 20, false},
		{"1.5", 3 * g / 2, false}, {"1TiB", 1 << 40, false}, {"4096B", 4096, false},
		{"0", 0, true}, {"-1", 0, true}, {"", 0, true}, {"GiB", 0, true}, {"4 GB", 0, true}, {"1.5B", 0, true}, {"1e9", 0, true},
		{"99999999999999999999TiB", 0, true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestGiBString(t *testing.T) {
	for in, want := range map[uint64]string{0: "0", g: "1", 15 * g: "15", 3 * g / 2: "1.5", g / 4: "0.25", g / 3: "0.33", 15*g + 768<<20: "15.75"} {
		if got := gibString(in); got != want {
			t.Errorf("gibString(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestDoctorFindings(t *testing.T) {
	f := newFakeDaemon(t)
	tests := []struct {
		name   string
		setup  func(t *testing.T, root string)
		statfs map[string]int64
		want   []string
	}{
		{"static CPU policy", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "var/lib/kubelet/cpu_manager_state"), `{"policyName":"static","defaultCpuSet":"0-3"}`)
		}, nil, []string{"FAIL  kubelet  kubelet CPU manager policy is static; fix: set the kubelet's cpuManagerPolicy to none"}},
		{"old driver", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "proc/driver/nvidia/version"), "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Jan  1 00:00:00 UTC 2021\n")
		}, nil, []string{"FAIL  driver", "older than the oldest supported (535); fix: upgrade the NVIDIA driver to 535..595"}},
		{"no module, no files", func(t *testing.T, root string) {}, nil, []string{
			"FAIL  module   cgpu.ko is not loaded", "fix: modprobe cgpu",
			"FAIL  cdi", "fix: cgpuctl setup", "FAIL  hooks"}},
		{"driver that cannot be hooked", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "proc/cgpu_km/version"), "1.0.0\n")
			write(t, filepath.Join(root, "proc/cgpu_km/hooks"), "nvidia: - (nvidia is loaded, nvidia_unlocked_ioctl cannot be hooked: attach refused)\nnvidia-uvm: nvidia_uvm\narmed: no\n")
		}, nil, []string{"FAIL  module   cgpu.ko 1.0.0: nvidia: - (nvidia is loaded, nvidia_unlocked_ioctl cannot be hooked", "fix: this NVIDIA driver's entry points"}},
		{"cgroup v1", func(t *testing.T, root string) {}, map[string]int64{"cgroup": tmpfsMagic}, []string{
			"FAIL  cgroup", "is not cgroup v2 (filesystem magic 0x1021994); fix: boot with systemd.unified_cgroup_hierarchy=1"}},
		{"bad CDI spec", func(t *testing.T, root string) {
			write(t, filepath.Join(root, "etc/cdi/cgpu.yaml"), "cdiVersion: 0.3.0\nkind: cgpu.io/gpu\ndevices: []\n")
		}, nil, []string{"FAIL  cdi      CDI spec", "invalid:", "no devices"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"doctor", "--socket", f.socket},
				WithIO(strings.NewReader(""), &out, &errb),
				WithGetenv(func(string) string { return "" }),
				WithPaths(Under(root)),
				WithStatfs(func(p string) (int64, error) {
					if m, ok := tt.statfs[filepath.Base(p)]; ok {
						return m, nil
					}
					if filepath.Base(p) == "bpf" {
						return bpffsMagic, nil
					}
					return cgroup2Magic, nil
				}))
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("doctor output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	t.Run("degraded daemon", func(t *testing.T) {
		f.mu.Lock()
		f.health = v1.Health{Status: "degraded", Checks: []v1.Check{{Name: "module", OK: false, Message: "cgpu.ko not loaded"}}}
		f.mu.Unlock()
		defer func() { f.mu.Lock(); f.health.Status = "ok"; f.mu.Unlock() }()
		r := run(t, f.socket, "", "doctor")
		if r.code != ExitError || !strings.Contains(r.stdout, "FAIL  daemon   cgpud is degraded: module: cgpu.ko not loaded") {
			t.Errorf("exit %d, output:\n%s", r.code, r.stdout)
		}
	})
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompletion(t *testing.T) {
	f := newFakeDaemon(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := run(t, f.socket, "", "completion", sh)
		if r.code != 0 || !strings.Contains(r.stdout, "cgpuctl") {
			t.Errorf("completion %s: exit %d", sh, r.code)
		}
	}
	r := run(t, f.socket, "", "__complete", "instance", "show", "")
	for _, n := range []string{"web-1", "train", "small"} {
		if !strings.Contains(r.stdout, n) {
			t.Errorf("instance names completion lacks %s: %q", n, r.stdout)
		}
	}
}

func TestDriverVersion(t *testing.T) {
	tests := []struct{ text, want, err string }{
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.45.04  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Oct  9 18:29:43 UTC 2025\nGCC version:  gcc version 12.2.0\n", "595.45.04", ""},
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n", "535.104.05", ""},
		{"GCC version:  gcc version 12.2.0\n", "", "no 'NVRM version:' line"},
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module\n", "", "no version number"},
	}
	for _, tt := range tests {
		root := t.TempDir()
		write(t, filepath.Join(root, "proc/driver/nvidia/version"), tt.text)
		a := &app{Options: Options{Paths: Under(root)}}
		got, _, err := a.driver()
		if got != tt.want || (tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err))) {
			t.Errorf("%q: got %q, %v; want %q, %q", tt.text, got, err, tt.want, tt.err)
		}
	}
}

func TestHookCommands(t *testing.T) {
	f := newFakeDaemon(t)
	mk := func(env ...string) string {
		dir := t.TempDir()
		b, _ := json.Marshal(map[string]any{"process": map[string]any{"env": env}})
		write(t, filepath.Join(dir, "config.json"), string(b))
		return dir
	}
	sliced, big, plain := mk("ALIYUN_COM_GPU_MEM_CONTAINER=4"), mk("ALIYUN_COM_GPU_MEM_CONTAINER=16"), mk("PATH=/bin")
	// testdata/host/etc/cgpu/cgpud.toml says env_policy = "untrusted".
	optOut := t.TempDir()
	b, _ := json.Marshal(map[string]any{"process": map[string]any{"env": []string{"ALIYUN_COM_GPU_MEM_CONTAINER=4", "CGPU_DISABLE=1"}},
		"linux": map[string]any{"devices": []map[string]any{{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0}}}})
	write(t, filepath.Join(optOut, "config.json"), string(b))
	st := func(b, status string) string {
		return `{"ociVersion":"1.0.2","id":"ctr1","pid":4242,"status":"` + status + `","bundle":"` + b + `"}`
	}
	tests := []struct {
		name    string
		argv    []string
		stdin   string
		code    int
		errHas  string
		lastReq string
	}{
		{"create", []string{"hook", "create-runtime"}, st(sliced, "creating"), 0, "", "POST /v1/instances"},
		{"prestart alias, --socket=", []string{"--socket=" + f.socket, "hook", "prestart"}, st(sliced, "created"), 0, "", "POST /v1/instances"},
		{"refused: fail closed with the daemon's reason", []string{"hook", "create-runtime"}, st(big, "creating"), ExitError,
			"cgpuctl: " + v1.ErrorPrefixCreate + "GPU 0 has 6 GiB free, 16 GiB asked", "POST /v1/instances"},
		{"no slice", []string{"hook", "create-runtime"}, st(plain, "creating"), 0, "", ""},
		{"the node's env policy", []string{"hook", "create-runtime"}, st(optOut, "creating"), ExitError,
			"cgpuctl: " + v1.ErrorPrefixCreate + "CGPU_DISABLE=1 would run the container without the slice", ""},
		{"bad stdin", []string{"hook", "poststop"}, "garbage", ExitError, "cgpuctl: container state on stdin is not the OCI state JSON", ""},
		{"poststop", []string{"hook", "poststop"}, st(sliced, "stopped"), 0, "", "GET /v1/instances?container=ctr1"},
		{"oci picks poststop", []string{"hook", "oci"}, st(sliced, "stopped"), 0, "", "GET /v1/instances?container=ctr1"},
		{"unknown stage", []string{"hook", "prestop"}, st(sliced, "creating"), ExitUsage, `unknown command "prestop"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.requests())
			r := run(t, f.socket, tt.stdin, tt.argv...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if tt.errHas != "" && !strings.Contains(r.stderr, tt.errHas) {
				t.Errorf("stderr %q lacks %q", r.stderr, tt.errHas)
			}
			if tt.code == ExitError && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("want one line: %q", r.stderr)
			}
			reqs := f.requests()[before:]
			switch {
			case tt.lastReq == "" && tt.code == 0 && len(reqs) != 0:
				t.Errorf("daemon contacted: %v", reqs)
			case tt.lastReq != "" && (len(reqs) == 0 || reqs[len(reqs)-1] != tt.lastReq):
				t.Errorf("requests %v, want last %q", reqs, tt.lastReq)
			}
		})
	}
}
