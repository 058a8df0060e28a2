package devfilter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Names the drivers register in /proc/devices and sysfs. nvmock.ko uses the
// same names as the real driver (tests/nvmock/README.md), so they are not
// options.
const (
	uvmDeviceName  = "nvidia-uvm" // nvidia-uvm.ko's dynamic major
	cgpuDeviceName = "cgpu"       // cgpu.ko's misc device
)

// charMajors reads the "Character devices:" section of /proc/devices into
// name → major. A name registered twice keeps its first major.
func charMajors(r io.Reader) (map[string]uint32, error) {
	majors := map[string]uint32{}
	inChar := false
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case line == "Character devices:":
			inChar = true
			continue
		case strings.HasSuffix(line, ":"):
			inChar = false
			continue
		case !inChar:
			continue
		}
		num, name, ok := strings.Cut(line, " ")
		name = strings.TrimSpace(name)
		maj, err := strconv.ParseUint(num, 10, 32)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("line %d: %q is not \"MAJOR NAME\"", n, line)
		}
		if _, dup := majors[name]; !dup {
			majors[name] = uint32(maj)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return majors, nil
}

// parseDevNumber reads sysfs's "MAJOR:MINOR\n".
func parseDevNumber(s string) (major, minor uint32, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not MAJOR:MINOR", s)
	}
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%q is not MAJOR:MINOR", s)
	}
	return uint32(ma), uint32(mi), nil
}

// resolveDevices finds the numbers of the devices the filter denies besides
// the GPU nodes. A device that is not registered now (nvidia-uvm not loaded
// yet, cgpu.ko absent) resolves to a zero major; anything unreadable or
// malformed is an error, so a filter is never built on a guess.
func resolveDevices(procRoot, sysRoot, devRoot string) (devices, error) {
	var d devices
	f, err := os.Open(filepath.Join(procRoot, "devices"))
	if err != nil {
		return d, fmt.Errorf("read device majors: %w", err)
	}
	defer f.Close()
	majors, err := charMajors(f)
	if err != nil {
		return d, fmt.Errorf("parse %s: %w", f.Name(), err)
	}
	d.uvmToolsMajor = majors[uvmDeviceName]

	sysDev := filepath.Join(sysRoot, "class", "misc", cgpuDeviceName, "dev")
	b, err := os.ReadFile(sysDev)
	switch {
	case err == nil:
		if d.cgpuMajor, d.cgpuMinor, err = parseDevNumber(string(b)); err != nil {
			return d, fmt.Errorf("parse %s: %w", sysDev, err)
		}
		return d, nil
	case !errors.Is(err, fs.ErrNotExist):
		return d, fmt.Errorf("read /dev/cgpu's number: %w", err)
	}

	// No sysfs (a container without /sys/class, a fixture): the node.
	node := filepath.Join(devRoot, cgpuDeviceName)
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return d, nil
		}
		return d, fmt.Errorf("stat %s: %w", node, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return d, fmt.Errorf("%s is not a character device", node)
	}
	d.cgpuMajor, d.cgpuMinor = unix.Major(st.Rdev), unix.Minor(st.Rdev)
	return d, nil
}
