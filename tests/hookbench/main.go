// Command hookbench measures cgpuctl's OCI hook as a runtime runs it: a
// fresh process, the container state on stdin, the bundle's config.json
// read, and (for a container that asks for a slice) one request to the
// daemon on its Unix socket, against `true` run the same way in the same
// loop. The daemon here is a stand-in that answers at once, so the figures
// are the hook's own cost; cgpud's work (the kernel instance, the device
// filter) is measured by the VM benchmarks.
//
//	go run ./tests/hookbench -cgpuctl build/cgpuctl [-n 300]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/stats"
)

type benchCase struct {
	name  string
	key   string
	argv  []string
	stdin []byte
	times []time.Duration
}

func main() {
	cgpuctl := flag.String("cgpuctl", "", "the cgpuctl binary to measure")
	n := flag.Int("n", 300, "runs of each case")
	flag.Parse()
	if *cgpuctl == "" {
		fmt.Fprintln(os.Stderr, "hookbench: -cgpuctl PATH is required")
		os.Exit(2)
	}
	if err := run(*cgpuctl, *n); err != nil {
		fmt.Fprintln(os.Stderr, "hookbench:", err)
		os.Exit(1)
	}
}

func run(cgpuctl string, n int) error {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hookbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "d.sock")
	stop, err := serve(sock)
	if err != nil {
		return err
	}
	defer stop()

	bundle := func(name string, env ...string) (string, error) {
		b := filepath.Join(dir, name)
		if err := os.MkdirAll(b, 0o755); err != nil {
			return "", err
		}
		cfg, _ := json.Marshal(map[string]any{"ociVersion": "1.0.2",
			"process": map[string]any{"args": []string{"/bin/sh"}, "env": append([]string{"PATH=/usr/bin:/bin", "TERM=xterm"}, env...)}})
		return b, os.WriteFile(filepath.Join(b, "config.json"), cfg, 0o644)
	}
	plain, err := bundle("plain")
	if err != nil {
		return err
	}
	sliced, err := bundle("sliced", "ALIYUN_COM_GPU_MEM_CONTAINER=4", "NVIDIA_VISIBLE_DEVICES=0")
	if err != nil {
		return err
	}
	// The hook reads /proc/<pid>/cgroup: this process's own will do.
	state := func(b, status string) []byte {
		s, _ := json.Marshal(map[string]any{"ociVersion": "1.0.2", "id": "bench", "status": status, "pid": os.Getpid(), "bundle": b})
		return s
	}
	cases := []*benchCase{
		{name: "true (baseline)", key: "true", argv: []string{trueBin}, stdin: state(sliced, "creating")},
		{name: "hook, no slice", key: "hook_noslice", argv: []string{cgpuctl, "--socket", sock, "hook", "create-runtime"}, stdin: state(plain, "creating")},
		{name: "hook, slice (create)", key: "hook_create", argv: []string{cgpuctl, "--socket", sock, "hook", "create-runtime"}, stdin: state(sliced, "creating")},
		{name: "hook, poststop", key: "hook_poststop", argv: []string{cgpuctl, "--socket", sock, "hook", "poststop"}, stdin: state(sliced, "stopped")},
	}
	// Interleaved, so a busy moment of the machine falls on every case alike.
	for i := -10; i < n; i++ {
		for _, c := range cases {
			d, err := once(c.argv, c.stdin)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if i >= 0 {
				c.times = append(c.times, d)
			}
		}
	}
	base50, base99 := stats.Percentile(cases[0].times, 50), stats.Percentile(cases[0].times, 99)
	fmt.Printf("%-22s %6s %10s %10s %10s %10s\n", "case", "runs", "p50", "p99", "p50/true", "p99/true")
	for _, c := range cases {
		p50, p99 := stats.Percentile(c.times, 50), stats.Percentile(c.times, 99)
		fmt.Printf("%-22s %6d %10s %10s %10.2f %10.2f\n", c.name, len(c.times), ms(p50), ms(p99),
			float64(p50)/float64(base50), float64(p99)/float64(base99))
	}
	fmt.Println("targets: hook with a slice < 10 ms p99; a container without a slice pays < 2 ms (no-slice p50 minus true p50)")
	for _, c := range cases {
		fmt.Printf("bench: %s_p50 %.3f ms\n", c.key, msf(stats.Percentile(c.times, 50)))
		fmt.Printf("bench: %s_p99 %.3f ms\n", c.key, msf(stats.Percentile(c.times, 99)))
	}
	fmt.Printf("bench: hook_create_p99_over_true %.2f ratio\n", float64(stats.Percentile(cases[2].times, 99))/float64(base99))
	fmt.Printf("bench: hook_noslice_cost_p50 %.3f ms\n", msf(stats.Percentile(cases[1].times, 50)-base50))
	return nil
}

func once(argv []string, stdin []byte) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%v: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	return d, nil
}

// serve answers the hook's requests the way cgpud does, without the work.
func serve(sock string) (func(), error) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/instances", func(w http.ResponseWriter, r *http.Request) {
		var req v1.CreateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(v1.Instance{Name: "bench", ContainerID: req.ContainerID, Cgroup: req.Cgroup, Memory: req.Memory, State: v1.StateReady})
	})
	mux.HandleFunc("GET /v1/instances", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]v1.Instance{{Name: "bench", ContainerID: r.URL.Query().Get("container")}})
	})
	mux.HandleFunc("DELETE /v1/instances/{name}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func ms(d time.Duration) string   { return fmt.Sprintf("%.3f ms", msf(d)) }
