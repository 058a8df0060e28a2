// Package hook is the OCI runtime hook: createRuntime (or prestart) asks
// cgpud for a slice bound to the container's cgroup, poststop removes it.
// The container state comes on stdin (runtime-spec "State"), the
// environment contract from the bundle's config.json.
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/contract"
)

// Bounds on what is read: a state is a few hundred bytes, a config.json
// rarely more than tens of KiB.
const (
	maxState  = 1 << 20
	maxConfig = 16 << 20
	mib       = uint64(1) << 20
)

// State is the OCI container state a runtime gives its hooks on stdin.
type State = specs.State

// Daemon is the part of cgpud's API the hook uses (*v1.Client has it).
type Daemon interface {
	GPUs(ctx context.Context) ([]v1.GPU, error)
	CreateInstance(ctx context.Context, req v1.CreateRequest) (v1.Instance, error)
	ListInstances(ctx context.Context, containerID string) ([]v1.Instance, error)
	DestroyInstance(ctx context.Context, name string, force bool) error
}

var _ Daemon = (*v1.Client)(nil)

// Hook runs the hook stages.
type Hook struct {
	procRoot   string
	configFile string
	daemon     func() Daemon
}

// Option configures a Hook.
type Option func(*Hook)

// WithProcRoot sets where /proc is (tests use fixtures).
func WithProcRoot(p string) Option { return func(h *Hook) { h.procRoot = p } }

// WithDaemon sets how the daemon is reached; it is called only when a stage
// needs the daemon, so a container without a slice never connects.
func WithDaemon(f func() Daemon) Option { return func(h *Hook) { h.daemon = f } }

// New returns a Hook; by default it reads /proc and /etc/cgpu/cgpud.toml
// and dials v1.DefaultSocket.
func New(opts ...Option) *Hook {
	h := &Hook{procRoot: "/proc", configFile: contract.ConfigFile, daemon: func() Daemon { return v1.NewClient(v1.DefaultSocket) }}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Result says what a stage did, for callers that report it.
type Result struct {
	// Skipped is why nothing was asked of the daemon ("" if it was).
	Skipped  string
	Instance *v1.Instance
	Removed  []string
}

// ReadState parses the container state from a hook's stdin.
func ReadState(r io.Reader) (State, error) {
	var st State
	b, err := io.ReadAll(io.LimitReader(r, maxState+1))
	if err != nil {
		return st, fmt.Errorf("read container state from stdin: %w", err)
	}
	if len(b) > maxState {
		return st, fmt.Errorf("container state on stdin is over %d bytes", maxState)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return st, errors.New("no container state on stdin (the runtime passes it to hooks as JSON)")
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("container state on stdin is not the OCI state JSON: %v", err)
	}
	if st.ID == "" {
		return st, errors.New("container state on stdin has no id")
	}
	return st, nil
}

// Cgroup returns the cgroup v2 path of pid, relative to the cgroup2 mount,
// from the "0::" line of /proc/<pid>/cgroup.
func (h *Hook) Cgroup(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("container state has no pid (%d): createRuntime/prestart hooks get the container's init pid", pid)
	}
	p := filepath.Join(h.procRoot, strconv.Itoa(pid), "cgroup")
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read the container's cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			path = strings.TrimSpace(path)
			if !strings.HasPrefix(path, "/") {
				return "", fmt.Errorf("%s: cgroup v2 path %q is not absolute", p, path)
			}
			if strings.HasSuffix(path, " (deleted)") {
				return "", fmt.Errorf("%s: the container's cgroup %q is already gone", p, path)
			}
			return path, nil
		}
	}
	return "", fmt.Errorf("%s has no cgroup v2 (\"0::\") line: cgpu needs the unified hierarchy", p)
}

// createError words a failed create as ACK's cGPU does, once.
func createError(err error) error {
	msg := err.Error()
	if strings.HasPrefix(msg, v1.ErrorPrefixCreate) {
		return err
	}
	return fmt.Errorf("%s%w", v1.ErrorPrefixCreate, err)
}

// CreateRuntime is the createRuntime/prestart stage: read the state and the
// bundle's environment and, if the container asks for a slice, have the
// daemon make one bound to its cgroup. Any failure after a slice was asked
// for is an error: the runtime must not start the container (fail closed).
func (h *Hook) CreateRuntime(ctx context.Context, stdin io.Reader) (Result, error) {
	st, err := ReadState(stdin)
	if err != nil {
		return Result{}, err
	}
	spec, err := readConfig(st.Bundle)
	if err != nil {
		return Result{}, err
	}
	req, want, err := h.decide(spec)
	if err != nil {
		return Result{}, createError(err)
	}
	if !want {
		return Result{Skipped: "no GPU slice asked for"}, nil
	}
	cg, err := h.Cgroup(st.Pid)
	if err != nil {
		return Result{}, createError(err)
	}
	d := h.daemon()
	in, err := h.create(ctx, d, st, req, cg)
	if err != nil {
		return Result{}, createError(err)
	}
	return Result{Instance: &in}, nil
}

func (h *Hook) create(ctx context.Context, d Daemon, st State, req contract.Request, cg string) (v1.Instance, error) {
	var gpus []v1.GPU
	if req.AllGPUs || req.DevMemory > 0 {
		var err error
		if gpus, err = d.GPUs(ctx); err != nil {
			return v1.Instance{}, err
		}
	}
	cr := v1.CreateRequest{ContainerID: st.ID, Cgroup: cg, GPUs: req.GPUs, Memory: req.Memory, Weight: req.Weight}
	if req.AllGPUs {
		if len(gpus) == 0 {
			return v1.Instance{}, errors.New("the container asks for all GPUs and cgpud has none")
		}
		for _, g := range gpus {
			cr.GPUs = append(cr.GPUs, strconv.Itoa(g.Index))
		}
	}
	if req.DevMemory > 0 {
		if err := checkDevMemory(gpus, cr.GPUs, req.DevMemory); err != nil {
			return v1.Instance{}, err
		}
	}
	in, err := d.CreateInstance(ctx, cr)
	if v1.IsConflict(err) {
		// createRuntime and prestart may both be configured (CDI and
		// hooks.d): the slice this container already has is the answer.
		if l, lerr := d.ListInstances(ctx, st.ID); lerr == nil {
			for _, have := range l {
				if have.Cgroup == cg || strings.HasSuffix(have.Cgroup, cg) {
					return have, nil
				}
			}
		}
	}
	if err != nil {
		return in, err
	}
	if req.DevMemory > 0 && len(cr.GPUs) == 0 {
		// Placement chose the GPU: check it now, and take the slice back if
		// the card is smaller than the scheduler thought.
		var chosen []string
		for _, g := range in.GPUs {
			chosen = append(chosen, strconv.Itoa(g.Index))
		}
		if cerr := checkDevMemory(gpus, chosen, req.DevMemory); cerr != nil {
			if derr := d.DestroyInstance(ctx, in.Name, true); derr != nil && !v1.IsNotFound(derr) {
				return in, fmt.Errorf("%v; removing the instance %s made for it also failed: %v", cerr, in.Name, derr)
			}
			return in, cerr
		}
	}
	return in, nil
}

// checkDevMemory refuses GPUs smaller than ALIYUN_COM_GPU_MEM_DEV says.
func checkDevMemory(gpus []v1.GPU, want []string, dev uint64) error {
	for _, w := range want {
		for _, g := range gpus {
			if strconv.Itoa(g.Index) != w && g.UUID != w {
				continue
			}
			if g.MemoryTotal < dev {
				return fmt.Errorf("GPU %d has %d MiB but %s says the scheduler counted %d MiB: the node's advertised GPU memory is wrong",
					g.Index, g.MemoryTotal/mib, contract.EnvMemDev, dev/mib)
			}
		}
	}
	return nil
}

// Poststop removes the container's instances. It is idempotent: no
// instance, or one already gone, is success. A container for which the
// create stage would ask no slice is not looked up (the daemon is not
// contacted); one it cannot tell about is.
func (h *Hook) Poststop(ctx context.Context, stdin io.Reader) (Result, error) {
	st, err := ReadState(stdin)
	if err != nil {
		return Result{}, err
	}
	if spec, err := readConfig(st.Bundle); err == nil {
		if _, want, derr := h.decide(spec); derr == nil && !want {
			return Result{Skipped: "no GPU slice asked for"}, nil
		}
	}
	d := h.daemon()
	l, err := d.ListInstances(ctx, st.ID)
	if err != nil {
		return Result{}, fmt.Errorf("list the instances of container %s: %w", st.ID, err)
	}
	var res Result
	for _, in := range l {
		if in.ContainerID != st.ID {
			continue
		}
		if err := d.DestroyInstance(ctx, in.Name, true); err != nil && !v1.IsNotFound(err) {
			return res, fmt.Errorf("remove instance %s of container %s: %w", in.Name, st.ID, err)
		}
		res.Removed = append(res.Removed, in.Name)
	}
	return res, nil
}

// Stage tells the stages apart by the state's status, for runtimes that
// call one command for several stages (hooks.d): "stopped" is poststop,
// anything else (creating, created) is the create stage.
func Stage(st State) string {
	if st.Status == specs.StateStopped {
		return "poststop"
	}
	return "create-runtime"
}

// Auto runs the stage Stage picks from the state on stdin.
func (h *Hook) Auto(ctx context.Context, stdin io.Reader) (string, Result, error) {
	b, err := io.ReadAll(io.LimitReader(stdin, maxState+1))
	if err != nil {
		return "", Result{}, fmt.Errorf("read container state from stdin: %w", err)
	}
	st, err := ReadState(strings.NewReader(string(b)))
	if err != nil {
		return "", Result{}, err
	}
	stage := Stage(st)
	var res Result
	if stage == "poststop" {
		res, err = h.Poststop(ctx, strings.NewReader(string(b)))
	} else {
		res, err = h.CreateRuntime(ctx, strings.NewReader(string(b)))
	}
	return stage, res, err
}
