package v1

import "fmt"

// The rules on names, memory and GPU minors, one place for all of cgpu's Go
// code: the API server, the daemon's Manager and its kernel client check
// with these, and cgpu.ko checks the same ones (kmod/include/uapi/cgpu.h;
// rules_test.go compiles that header and holds these constants to it).
const (
	// KernelNameMax is the longest name cgpu.ko takes: CGPU_NAME_LEN
	// less the NUL.
	KernelNameMax = 63
	// NameMax is the longest instance name. An instance has one kernel
	// instance per GPU, named "<name>.<GPU index>"; an index has at most
	// three digits (there are at most MaxGPUMinor+1 GPUs), so such a name
	// fits in KernelNameMax.
	NameMax = 48
	// NameChars is the alphabet of names, as a bracket expression; "."
	// and ".." are not names (cgpu.ko makes one procfs directory a name).
	NameChars = "A-Za-z0-9_.-"
	// MaxGPUMinor is the largest minor of a GPU node /dev/nvidiaN:
	// NVIDIA's driver gives GPUs 0..247; 248..253 are unused, 254 is
	// nvidia-modeset and 255 nvidiactl.
	MaxGPUMinor = 247
	// MaxMemory is the largest slice, bytes per GPU: 2^48 (256 TiB),
	// the most cgpu.ko accepts (CGPU_MEM_LIMIT_MAX), three orders of
	// magnitude above any GPU's memory.
	MaxMemory = uint64(1) << 48
)

// A kernel instance's name, NameMax characters, "." and three digits,
// must fit; this fails to compile when it does not.
const _ = uint(KernelNameMax - NameMax - len(".999"))

// ValidName says why name cannot be an instance name, or nil.
func ValidName(name string) error { return checkName(name, NameMax) }

// ValidKernelName says why cgpu.ko would refuse name, or nil.
func ValidKernelName(name string) error { return checkName(name, KernelNameMax) }

// NameChar says whether c is in NameChars.
func NameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

func checkName(name string, max int) error {
	if name == "" || len(name) > max {
		return fmt.Errorf("instance name %q: 1 to %d characters of %s", name, max, NameChars)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("instance name %q is reserved", name)
	}
	for i := 0; i < len(name); i++ {
		if !NameChar(name[i]) {
			return fmt.Errorf("instance name %q: character %q is not one of %s", name, name[i], NameChars)
		}
	}
	return nil
}

// ValidMemory says why m bytes cannot be a slice, or nil.
func ValidMemory(m uint64) error {
	if m == 0 {
		return fmt.Errorf("memory: 0 bytes; give the slice in bytes")
	}
	if m > MaxMemory {
		return fmt.Errorf("memory: %d bytes is above the most a slice takes, %d (the API takes bytes, not GiB or MiB)", m, MaxMemory)
	}
	return nil
}
