package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The environment contract (docs/design.md), read from the bundle's
// config.json process.env.
const (
	EnvMem       = "ALIYUN_COM_GPU_MEM_CONTAINER"
	EnvMemUnit   = "ALIYUN_COM_GPU_MEM_UNIT"
	EnvMemDev    = "ALIYUN_COM_GPU_MEM_DEV"
	EnvVisible   = "ALIYUN_COM_GPU_VISIBLE_DEVICES"
	EnvNVVisible = "NVIDIA_VISIBLE_DEVICES"
	EnvWeight    = "ALIYUN_COM_GPU_SCHD_WEIGHT"
	EnvDisable   = "CGPU_DISABLE"
	// EnvCDIGPUPrefix starts the variables cgpu's CDI devices inject, one per
	// GPU asked for (CGPU_CDI_GPU_0=0): distinct names, so that asking for
	// several devices names them all.
	EnvCDIGPUPrefix = "CGPU_CDI_GPU_"
)

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

// Request is what a container's environment asks of cgpu.
type Request struct {
	// Memory is the slice per GPU, bytes.
	Memory uint64
	// GPUs are indices or UUIDs; empty with AllGPUs false means the
	// daemon's placement picks one.
	GPUs    []string
	AllGPUs bool
	Weight  uint32
	// DevMemory is ALIYUN_COM_GPU_MEM_DEV in bytes (0: not set): the card's
	// memory as the scheduler saw it. A card smaller than that means the
	// scheduler's accounting is wrong for this node, so the hook refuses.
	DevMemory uint64
	// MemVar is the variable as given, for messages.
	MemVar string
}

// envMap maps the first value of each name, as getenv(3) in the container
// would see it.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := m[k]; !seen {
			m[k] = v
		}
	}
	return m
}

// ParseEnv reads the contract from a container's environment. want is false
// when the container asked for no slice (ALIYUN_COM_GPU_MEM_CONTAINER unset
// or 0), when cgpu is disabled for it (CGPU_DISABLE=true|1), or when it sees
// no GPU (visible devices "none", "void" or empty): then the hook does
// nothing. A value that cannot be read is an error: the hook fails closed.
func ParseEnv(env []string) (req Request, want bool, err error) {
	m := envMap(env)
	switch d := strings.ToLower(strings.TrimSpace(m[EnvDisable])); d {
	case "true", "1":
		return req, false, nil
	case "", "false", "0":
	default:
		return req, false, fmt.Errorf("%s=%q: want true, 1, false or 0", EnvDisable, m[EnvDisable])
	}
	raw, ok := m[EnvMem]
	if !ok {
		return req, false, nil
	}
	unit, err := parseUnit(m[EnvMemUnit])
	if err != nil {
		return req, false, err
	}
	n, err := parseCount(EnvMem, raw, unit)
	if err != nil {
		return req, false, err
	}
	if n == 0 {
		return req, false, nil
	}
	req.Memory, req.MemVar = n, EnvMem+"="+strings.TrimSpace(raw)
	if s, ok := m[EnvMemDev]; ok && strings.TrimSpace(s) != "" {
		if req.DevMemory, err = parseCount(EnvMemDev, s, unit); err != nil {
			return req, false, err
		}
		if req.DevMemory > 0 && req.Memory > req.DevMemory {
			return req, false, fmt.Errorf("%s asks for more than the card's %s=%s", req.MemVar, EnvMemDev, strings.TrimSpace(s))
		}
	}
	if s, ok := m[EnvWeight]; ok && strings.TrimSpace(s) != "" {
		w, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil || w == 0 {
			return req, false, fmt.Errorf("%s=%q: want an integer of at least 1", EnvWeight, s)
		}
		req.Weight = uint32(w)
	}
	devs, set, err := visible(m)
	if err != nil {
		return req, false, err
	}
	switch {
	case !set:
		// No variable: the daemon's placement picks a GPU.
	case len(devs) == 1 && devs[0] == "all":
		req.AllGPUs = true
	case len(devs) == 0:
		return req, false, nil
	default:
		req.GPUs = devs
	}
	return req, true, nil
}

func parseUnit(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "gib":
		return gib, nil
	case "mib":
		return mib, nil
	}
	return 0, fmt.Errorf("%s=%q: want GiB or MiB", EnvMemUnit, s)
}

func parseCount(name, s string, unit uint64) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want a whole number of %s", name, s, unitName(unit))
	}
	if n > math.MaxUint64/unit {
		return 0, fmt.Errorf("%s=%q: too large", name, s)
	}
	return n * unit, nil
}

func unitName(unit uint64) string {
	if unit == mib {
		return "MiB"
	}
	return "GiB"
}

// visible returns the GPUs the container sees, from the first of:
// ALIYUN_COM_GPU_VISIBLE_DEVICES, the CDI devices' CGPU_CDI_GPU_* (a CUDA
// image's own NVIDIA_VISIBLE_DEVICES=all must not widen what CDI gave),
// NVIDIA_VISIBLE_DEVICES. set is false when none is present. "none", "void"
// and "" mean no GPU; "all" is returned alone.
func visible(m map[string]string) (devs []string, set bool, err error) {
	if s, ok := m[EnvVisible]; ok {
		devs, err = parseDevices(EnvVisible, s)
		return devs, true, err
	}
	var cdi []string
	for k, v := range m {
		if strings.HasPrefix(k, EnvCDIGPUPrefix) {
			cdi = append(cdi, v)
		}
	}
	if len(cdi) > 0 {
		devs, err = parseDevices(EnvCDIGPUPrefix+"*", strings.Join(cdi, ","))
		sortDevices(devs)
		return devs, true, err
	}
	if s, ok := m[EnvNVVisible]; ok {
		devs, err = parseDevices(EnvNVVisible, s)
		return devs, true, err
	}
	return nil, false, nil
}

func parseDevices(name, s string) ([]string, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "", "none", "void":
		return nil, nil
	case "all":
		return []string{"all"}, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(t, ",") {
		f = strings.TrimSpace(f)
		if f == "" || !validDevice(f) {
			return nil, fmt.Errorf("%s=%q: want GPU indices or UUIDs separated by commas, all, none or void", name, s)
		}
		if strings.EqualFold(f, "all") {
			return []string{"all"}, nil
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out, nil
}

func validDevice(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == ':' || r == '.' || r == '/') {
			return false
		}
	}
	return true
}

// sortDevices orders indices numerically, then the rest by name, so the
// order does not depend on map iteration.
func sortDevices(d []string) {
	less := func(a, b string) bool {
		na, ea := strconv.Atoi(a)
		nb, eb := strconv.Atoi(b)
		switch {
		case ea == nil && eb == nil:
			return na < nb
		case ea == nil:
			return true
		case eb == nil:
			return false
		}
		return a < b
	}
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && less(d[j], d[j-1]); j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
