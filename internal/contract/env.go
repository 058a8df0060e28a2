package contract

import (
	"fmt"
	"math"
	"sort"
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
	// MemVar is ALIYUN_COM_GPU_MEM_CONTAINER as given ("NAME=value"),
	// whenever it is set, for messages.
	MemVar string
	// Asked is true when ALIYUN_COM_GPU_MEM_CONTAINER asks for a slice
	// (set, and not 0), also when the slice is then switched off.
	Asked bool
	// OptOut is the variable that switches cgpu off for the container
	// ("CGPU_DISABLE=1", "NVIDIA_VISIBLE_DEVICES=none"), whether or not a
	// slice is asked for; "" if none does. The hook refuses an opt-out
	// where the environment is not the admin's (EnvUntrusted).
	OptOut string
}

// envMap maps each name to its value and, in twice, each name given again
// with another value to that value. Which of two values a process sees is
// the runtime's choice, not the spec's (getenv(3) takes the first; runc's
// init sets each in turn, so the last wins), so cgpu must not pick one.
func envMap(env []string) (m, twice map[string]string) {
	m = make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if first, seen := m[k]; !seen {
			m[k] = v
		} else if v != first {
			if twice == nil {
				twice = map[string]string{}
			}
			if _, noted := twice[k]; !noted {
				twice[k] = v
			}
		}
	}
	return m, twice
}

// ownVariable is true for the variables of cgpu's contract (ACK's and
// cgpu's own), not NVIDIA's NVIDIA_VISIBLE_DEVICES.
func ownVariable(name string) bool {
	switch name {
	case EnvMem, EnvMemUnit, EnvMemDev, EnvVisible, EnvWeight, EnvDisable:
		return true
	}
	return strings.HasPrefix(name, EnvCDIGPUPrefix)
}

func givenTwice(m, twice map[string]string, name string) error {
	return fmt.Errorf("%s is set twice with different values (%q and %q): which one the container sees depends on the runtime, so cgpu takes neither", name, m[name], twice[name])
}

// ParseEnv reads the contract from a container's environment. want is false
// when the container asked for no slice (ALIYUN_COM_GPU_MEM_CONTAINER unset
// or 0), when cgpu is disabled for it (CGPU_DISABLE=true|1), or when it sees
// no GPU (visible devices "none", "void" or empty): then the hook does
// nothing. A value that cannot be read is an error: the hook fails closed.
// So is one of cgpu's variables set twice with different values, whether
// or not a slice is asked for; NVIDIA_VISIBLE_DEVICES, NVIDIA's, only when
// it is read (a slice is asked for and nothing before it names the GPUs).
func ParseEnv(env []string) (req Request, want bool, err error) {
	m, twice := envMap(env)
	for _, name := range sortedKeys(twice) {
		if ownVariable(name) {
			return req, false, givenTwice(m, twice, name)
		}
	}
	disabled := false
	switch d := strings.ToLower(strings.TrimSpace(m[EnvDisable])); d {
	case "true", "1":
		disabled = true
	case "", "false", "0":
	default:
		return req, false, fmt.Errorf("%s=%q: want true, 1, false or 0", EnvDisable, m[EnvDisable])
	}
	raw, ok := m[EnvMem]
	if ok {
		req.MemVar = EnvMem + "=" + strings.TrimSpace(raw)
	}
	if disabled || !ok {
		// Nothing more is read strictly: a container that asks for no
		// slice owes cgpu no well-formed value. What it says is kept for
		// the hook's env policy.
		req.Asked = ok && !isZero(raw)
		req.OptOut = optOut(m, twice, disabled)
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
		req.OptOut = optOut(m, twice, false)
		return req, false, nil
	}
	req.Memory, req.Asked = n, true
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
	devs, from, err := visible(m, twice)
	if err != nil {
		return req, false, err
	}
	switch {
	case from == "":
		// No variable: the daemon's placement picks a GPU.
	case len(devs) == 1 && devs[0] == "all":
		req.AllGPUs = true
	case len(devs) == 0:
		req.OptOut = from
		return req, false, nil
	default:
		req.GPUs = devs
	}
	return req, true, nil
}

// optOut is the variable that switches cgpu off, read leniently: for a
// container that asks for no slice a bad device list is no error.
func optOut(m, twice map[string]string, disabled bool) string {
	if disabled {
		return EnvDisable + "=" + strings.TrimSpace(m[EnvDisable])
	}
	if devs, from, err := visible(m, twice); err == nil && from != "" && len(devs) == 0 {
		return from
	}
	return ""
}

// isZero is true for a count that reads as 0 in any unit.
func isZero(s string) bool {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	return err == nil && n == 0
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
// NVIDIA_VISIBLE_DEVICES. from is the variable read, as NAME=value, ""
// when none is present. "none", "void" and "" mean no GPU; "all" is
// returned alone.
func visible(m, twice map[string]string) (devs []string, from string, err error) {
	if s, ok := m[EnvVisible]; ok {
		devs, err = parseDevices(EnvVisible, s)
		return devs, EnvVisible + "=" + strings.TrimSpace(s), err
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
		return devs, EnvCDIGPUPrefix + "*=" + strings.Join(cdi, ","), err
	}
	if s, ok := m[EnvNVVisible]; ok {
		if _, two := twice[EnvNVVisible]; two {
			return nil, EnvNVVisible + "=" + strings.TrimSpace(s), givenTwice(m, twice, EnvNVVisible)
		}
		devs, err = parseDevices(EnvNVVisible, s)
		return devs, EnvNVVisible + "=" + strings.TrimSpace(s), err
	}
	return nil, "", nil
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
