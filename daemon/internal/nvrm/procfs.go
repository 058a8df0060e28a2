package nvrm

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// ErrNoDriver means the driver's procfs directory is absent: no NVIDIA
// driver (or nvmock) is loaded.
var ErrNoDriver = errors.New("NVIDIA driver not loaded (no /proc/driver/nvidia)")

// ProcGPU is one GPU as /proc/driver/nvidia/gpus/<bus>/information
// describes it (docs/nvidia-abi.md §10.8).
type ProcGPU struct {
	BusID    string // dddd:bb:ss.f, the directory name
	Model    string
	UUID     string
	Minor    int
	Excluded bool
}

// DriverInfo is what the driver's procfs says about itself and its GPUs.
type DriverInfo struct {
	Version string // e.g. "595.45.04"
	GPUs    []ProcGPU
}

// Major returns the driver's major version (595 for "595.45.04"), or 0.
func (d DriverInfo) Major() int {
	m, _ := strconv.Atoi(strings.SplitN(d.Version, ".", 2)[0])
	return m
}

// versionRE finds the version in the `NVRM version:` line of either
// module flavour ("… x86_64  595.45.04  Release Build …" or
// "… Kernel Module  535.104.05  Sat Aug …").
var versionRE = regexp.MustCompile(`\s(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)\s`)

// ParseVersion extracts the driver version from the text of
// /proc/driver/nvidia/version.
func ParseVersion(text string) (string, error) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "NVRM version:") {
			continue
		}
		if m := versionRE.FindStringSubmatch(line + " "); m != nil {
			return m[1], nil
		}
		return "", fmt.Errorf("no version number in %q", line)
	}
	return "", errors.New("no 'NVRM version:' line")
}

// ParseInformation parses one gpus/<bus>/information file. Keys and
// values are separated by a colon and a run of tabs and spaces.
func ParseInformation(busID, text string) (ProcGPU, error) {
	g := ProcGPU{BusID: busID, Minor: -1}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.Trim(val, " \t")
		switch strings.TrimSpace(key) {
		case "Model":
			g.Model = val
		case "GPU UUID":
			g.UUID = val
		case "Device Minor":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > v1.MaxGPUMinor {
				return g, fmt.Errorf("gpu %s: bad device minor %q", busID, val)
			}
			g.Minor = n
		case "GPU Excluded":
			g.Excluded = val == "Yes"
		}
	}
	if g.Minor < 0 {
		return g, fmt.Errorf("gpu %s: no 'Device Minor' line", busID)
	}
	return g, nil
}

// ReadDriverInfo reads <procRoot>/driver/nvidia (procRoot is normally
// "/proc"; tests pass a fixture). GPUs come back sorted by minor.
func ReadDriverInfo(procRoot string) (DriverInfo, error) {
	var info DriverInfo
	dir := filepath.Join(procRoot, "driver", "nvidia")
	vb, err := os.ReadFile(filepath.Join(dir, "version"))
	if errors.Is(err, fs.ErrNotExist) {
		return info, ErrNoDriver
	}
	if err != nil {
		return info, fmt.Errorf("read driver version: %w", err)
	}
	if info.Version, err = ParseVersion(string(vb)); err != nil {
		return info, fmt.Errorf("parse %s: %w", filepath.Join(dir, "version"), err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "gpus"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("list GPUs: %w", err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, "gpus", e.Name(), "information"))
		if err != nil {
			return info, fmt.Errorf("read GPU %s: %w", e.Name(), err)
		}
		g, err := ParseInformation(e.Name(), string(b))
		if err != nil {
			return info, err
		}
		info.GPUs = append(info.GPUs, g)
	}
	sort.Slice(info.GPUs, func(i, j int) bool { return info.GPUs[i].Minor < info.GPUs[j].Minor })
	return info, nil
}
