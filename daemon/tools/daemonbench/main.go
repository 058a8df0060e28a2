// Command daemonbench is cgpud's host benchmark (issue 4): the real API
// stack (Unix socket, SO_PEERCRED, HTTP, strict decoding, the instance
// Manager, bbolt with fsync) over kernel.Fake and an in-memory device
// filter, measured against an empty handler on the same kind of socket and
// against one fsync'd bbolt write, all in the same run.
//
// The daemon side runs in a child process (this binary with -serve), so
// its RSS is the daemon's alone. Output: a table, then `bench: NAME VALUE
// UNIT` lines.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cgpu-dev/cgpu/internal/stats"
)

const (
	mockGPUs  = 16 // kernel.Fake's node
	perGPU    = 20
	gpuMemory = 80 << 30
	clients   = 32
)

var (
	// sliceBytes is each instance's memory: 1 GiB, less where 20 of them
	// would not fit a GPU (nvmock's cards in the guest).
	sliceBytes uint64 = 1 << 30
	numGPUs           = mockGPUs
	prefix            = "daemon_"
)

func main() {
	serve := flag.Bool("serve", false, "run the daemon side (internal)")
	dir := flag.String("dir", "", "work directory (internal)")
	seq := flag.Int("seq", 300, "sequential create+destroy round trips")
	conc := flag.Int("conc", 1500, "round trips spread over the 32 concurrent clients")
	fsyncs := flag.Int("fsync", 300, "fsync'd bbolt writes for the floor")
	real := flag.Bool("real", false, "the real cgpud parts (cgpu.ko, eBPF filters, cgroups under /sys/fs/cgroup): the VM guest, as root")
	filter := flag.Bool("filter", true, "with -real: attach eBPF device filters (false shows what they cost)")
	flag.Parse()
	if *serve {
		if err := runServer(*dir, *real, *filter); err != nil {
			fmt.Fprintln(os.Stderr, "daemonbench -serve:", err)
			os.Exit(1)
		}
		return
	}
	if *real {
		prefix = "daemon_guest_"
	}
	if *real && !*filter {
		prefix = "daemon_guest_nofilter_"
	}
	if err := run(*seq, *conc, *fsyncs, *real, *filter); err != nil {
		fmt.Fprintln(os.Stderr, "daemonbench:", err)
		os.Exit(1)
	}
}

func unixClient(sock string, conns int) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

func call(c *http.Client, method, path string, body []byte, want int) (time.Duration, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://cgpud"+path, r)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != want {
		return 0, fmt.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return d, nil
}

func createBody(name, cgroup string) []byte {
	b, _ := json.Marshal(map[string]any{"name": name, "container_id": name, "cgroup": cgroup, "memory": sliceBytes})
	return b
}

// roundTrips runs n create+destroy pairs over workers clients; it returns
// the create latencies and the wall time.
func roundTrips(c *http.Client, n, workers int, prefix string, cgroupOf func(w int) string) ([]time.Duration, time.Duration, error) {
	return trips(n, workers, func(w, i int) (time.Duration, error) {
		name := fmt.Sprintf("%s%d", prefix, i)
		d, err := call(c, "POST", "/v1/instances", createBody(name, cgroupOf(w)), http.StatusCreated)
		if err == nil {
			_, err = call(c, "DELETE", "/v1/instances/"+name, nil, http.StatusNoContent)
		}
		return d, err
	})
}

// emptyTrips is the baseline: the same requests to the empty handler.
func emptyTrips(c *http.Client, n, workers int) ([]time.Duration, time.Duration, error) {
	return trips(n, workers, func(_, i int) (time.Duration, error) {
		d, err := call(c, "POST", "/empty", createBody(fmt.Sprintf("e%d", i), "/x"), http.StatusCreated)
		if err == nil {
			_, err = call(c, "DELETE", "/empty", nil, http.StatusNoContent)
		}
		return d, err
	})
}

// trips runs trip for i in 0..n-1 over workers goroutines (worker w takes
// w, w+workers, ...; a worker stops at its first error) and returns the
// latencies trip measured, the wall time and the first error.
func trips(n, workers int, trip func(w, i int) (time.Duration, error)) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				d, err := trip(w, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// floor is one fsync'd bbolt write of about an instance record's size,
// on the same filesystem as the daemon's state: the physical floor of a
// crash-safe create.
type floor struct {
	db  *bolt.DB
	val []byte
	n   int
	lat []time.Duration
}

func openFloor(dir string) (*floor, error) {
	db, err := bolt.Open(filepath.Join(dir, "floor.db"), 0o600, nil)
	if err != nil {
		return nil, err
	}
	return &floor{db: db, val: bytes.Repeat([]byte("x"), 400)}, nil
}

func (f *floor) write() error {
	start := time.Now()
	err := f.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte(strconv.Itoa(f.n%64)), f.val)
	})
	f.n++
	f.lat = append(f.lat, time.Since(start))
	return err
}

func rssOf(pid int) (rss, hwm uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm, nil
}

func run(nSeq, nConc, nFsync int, real, filter bool) error {
	dir, err := os.MkdirTemp("", "daemonbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The container cgroups: plain directories on the host (the resolver's
	// cgroup2 check is off there), real cgroups in the guest.
	cgRoot := filepath.Join(dir, "cgroup")
	if real {
		cgRoot = "/sys/fs/cgroup"
	}
	var made []string
	defer func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	}()
	for i := range max(clients, 64*perGPU) {
		p := filepath.Join(cgRoot, "dbench", fmt.Sprintf("c%d", i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		made = append(made, p)
	}
	made = append([]string{filepath.Join(cgRoot, "dbench")}, made...)
	args := []string{"-serve", "-dir", dir}
	if real {
		args = append(args, "-real", fmt.Sprintf("-filter=%v", filter))
	}
	child := exec.Command(self, args...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer func() {
		child.Process.Signal(os.Interrupt)
		child.Wait()
	}()
	line := make([]byte, 64)
	n, err := out.Read(line)
	if err != nil || !strings.HasPrefix(string(line[:n]), "ready") {
		return fmt.Errorf("daemon side did not start: %q %v", line[:n], err)
	}
	api := unixClient(filepath.Join(dir, "api.sock"), clients)
	empty := unixClient(filepath.Join(dir, "empty.sock"), clients)
	cg := func(w int) string { return fmt.Sprintf("/dbench/c%d", w) }
	if err := learnGPUs(api); err != nil {
		return err
	}

	// Warm both paths up (connections, page cache, bbolt's first pages).
	if _, _, err := roundTrips(api, 20, 1, "warm", cg); err != nil {
		return err
	}
	if _, _, err := emptyTrips(empty, 20, 1); err != nil {
		return err
	}
	fl, err := openFloor(dir)
	if err != nil {
		return fmt.Errorf("fsync floor: %w", err)
	}
	defer fl.db.Close()
	// The sequential trips and the floor's writes alternate, so both meet
	// the same disk (a shared machine's disk drifts over seconds).
	var seqLat []time.Duration
	var seqWall time.Duration
	for i := range nSeq {
		if i < nFsync {
			if err := fl.write(); err != nil {
				return fmt.Errorf("fsync floor: %w", err)
			}
		}
		lat, wall, err := roundTrips(api, 1, 1, fmt.Sprintf("s%d-", i), cg)
		if err != nil {
			return fmt.Errorf("sequential: %w", err)
		}
		seqLat, seqWall = append(seqLat, lat...), seqWall+wall
	}
	floor := fl.lat
	concLat, concWall, err := roundTrips(api, nConc, clients, "p", cg)
	if err != nil {
		return fmt.Errorf("concurrent: %w", err)
	}
	eSeqLat, eSeqWall, err := emptyTrips(empty, nSeq, 1)
	if err != nil {
		return err
	}
	eConcLat, eConcWall, err := emptyTrips(empty, nConc, clients)
	if err != nil {
		return err
	}
	// Fill the node: 16 GPUs x 20 instances, then read the daemon's RSS.
	for i := range numGPUs * perGPU {
		name := fmt.Sprintf("full%d", i)
		b, _ := json.Marshal(map[string]any{"name": name, "container_id": name, "cgroup": cg(i), "memory": sliceBytes,
			"gpus": []string{strconv.Itoa(i % numGPUs)}})
		if _, err := call(api, "POST", "/v1/instances", b, http.StatusCreated); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	if _, err := call(api, "GET", "/v1/instances", nil, http.StatusOK); err != nil {
		return err
	}
	if _, err := call(api, "GET", "/metrics", nil, http.StatusOK); err != nil {
		return err
	}
	rss, hwm, err := rssOf(child.Process.Pid)
	if err != nil {
		return err
	}
	for i := range numGPUs * perGPU {
		if _, err := call(api, "DELETE", fmt.Sprintf("/v1/instances/full%d", i), nil, http.StatusNoContent); err != nil {
			return fmt.Errorf("empty the node: %w", err)
		}
	}

	seqRate := float64(nSeq) / seqWall.Seconds()
	concRate := float64(nConc) / concWall.Seconds()
	eSeqRate := float64(nSeq) / eSeqWall.Seconds()
	eConcRate := float64(nConc) / eConcWall.Seconds()
	if real {
		fmt.Printf("cgpud API benchmark in the guest: everything real (cgpu.ko on nvmock.ko, eBPF device filters: %v, cgroups, bbolt+fsync), %d GPUs, %d MiB slices\n", filter, numGPUs, sliceBytes>>20)
	} else {
		fmt.Printf("cgpud API benchmark (kernel.Fake, in-memory device filter; socket, HTTP, validation, Manager, bbolt+fsync real), %d GPUs\n", numGPUs)
	}
	fmt.Printf("%-34s %12s %10s %10s\n", "", "trips/s", "p50 ms", "p99 ms")
	fmt.Printf("%-34s %12.0f %10.3f %10.3f\n", "create+destroy, 1 client", seqRate, ms(stats.Percentile(seqLat, 50)), ms(stats.Percentile(seqLat, 99)))
	fmt.Printf("%-34s %12.0f %10.3f %10.3f\n", fmt.Sprintf("create+destroy, %d clients", clients), concRate, ms(stats.Percentile(concLat, 50)), ms(stats.Percentile(concLat, 99)))
	fmt.Printf("%-34s %12.0f %10.3f %10.3f\n", "empty handler, 1 client", eSeqRate, ms(stats.Percentile(eSeqLat, 50)), ms(stats.Percentile(eSeqLat, 99)))
	fmt.Printf("%-34s %12.0f %10.3f %10.3f\n", fmt.Sprintf("empty handler, %d clients", clients), eConcRate, ms(stats.Percentile(eConcLat, 50)), ms(stats.Percentile(eConcLat, 99)))
	fmt.Printf("%-34s %12s %10.3f %10.3f\n", "one fsync'd bbolt write", "", ms(stats.Percentile(floor, 50)), ms(stats.Percentile(floor, 99)))
	fmt.Printf("%-34s %12s %10.1f MiB (peak %.1f MiB)\n", fmt.Sprintf("daemon RSS, %d instances", numGPUs*perGPU), "", float64(rss)/(1<<20), float64(hwm)/(1<<20))
	fmt.Printf("(latencies are of the create request; a trip is a create and a destroy)\n")

	line2 := func(name string, v float64, unit string) {
		fmt.Printf("bench: %s%s %.3f %s\n", prefix, strings.TrimPrefix(name, "daemon_"), v, unit)
	}
	line2("daemon_seq_roundtrips", seqRate, "trips/s")
	line2("daemon_conc32_roundtrips", concRate, "trips/s")
	line2("daemon_conc32_over_seq", concRate/seqRate, "x")
	line2("daemon_create_p50", ms(stats.Percentile(seqLat, 50)), "ms")
	line2("daemon_create_p99", ms(stats.Percentile(seqLat, 99)), "ms")
	line2("daemon_fsync_write_p50", ms(stats.Percentile(floor, 50)), "ms")
	line2("daemon_fsync_write_p99", ms(stats.Percentile(floor, 99)), "ms")
	line2("daemon_create_p99_over_fsync_p99", ms(stats.Percentile(seqLat, 99)-stats.Percentile(floor, 99)), "ms")
	line2("daemon_empty_seq_roundtrips", eSeqRate, "trips/s")
	line2("daemon_empty_create_p50", ms(stats.Percentile(eSeqLat, 50)), "ms")
	line2("daemon_seq_over_empty", seqRate/eSeqRate, "x")
	line2(fmt.Sprintf("daemon_rss_%d_instances", numGPUs*perGPU), float64(rss)/(1<<20), "MiB")
	ok := func(b bool) string {
		if b {
			return "met"
		}
		return "MISSED"
	}
	if real {
		fmt.Printf("(the targets are the host's; the guest runs under TCG emulation and its /tmp is tmpfs)\n")
	}
	fmt.Printf("targets: p99 create <= fsync p99 + 1 ms: %s; 32 clients >= 5x sequential: %s; RSS < 40 MiB: %s\n",
		ok(stats.Percentile(seqLat, 99) <= stats.Percentile(floor, 99)+time.Millisecond), ok(concRate >= 5*seqRate), ok(rss < 40<<20))
	return nil
}

// learnGPUs reads the daemon's GPUs: how many to fill, and a slice size
// that 20 instances fit on the smallest.
func learnGPUs(c *http.Client) error {
	req, _ := http.NewRequest("GET", "http://cgpud/v1/gpus", nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var gpus []struct {
		MemoryTotal uint64 `json:"memory_total"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&gpus); err != nil {
		return fmt.Errorf("gpus: %w", err)
	}
	if len(gpus) == 0 {
		return fmt.Errorf("the daemon found no GPU")
	}
	numGPUs = min(len(gpus), 64)
	for _, g := range gpus {
		sliceBytes = min(sliceBytes, g.MemoryTotal/perGPU/(1<<20)*(1<<20))
	}
	return nil
}
