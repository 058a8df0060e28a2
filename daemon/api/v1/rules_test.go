package v1

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cgpu-dev/cgpu/daemon/internal/ctest"
)

const uapiHeader = "../../../kmod/include/uapi/cgpu.h"

// TestRulesMatchUAPIHeader holds the rules to cgpu.ko's: the macros as the
// compiler sees them, and the name alphabet as the header states it.
func TestRulesMatchUAPIHeader(t *testing.T) {
	p := ctest.New(uapiHeader)
	p.Num("CGPU_NAME_LEN", "CGPU_NAME_LEN")
	p.Num("CGPU_MAX_GPU_MINOR", "CGPU_MAX_GPU_MINOR")
	p.Num("CGPU_MEM_LIMIT_MAX", "CGPU_MEM_LIMIT_MAX")
	c := p.Run(t)
	if got := c.Num(t, "CGPU_NAME_LEN"); got != KernelNameMax+1 {
		t.Errorf("CGPU_NAME_LEN %d, KernelNameMax+1 %d", got, KernelNameMax+1)
	}
	if got := c.Num(t, "CGPU_MAX_GPU_MINOR"); got != MaxGPUMinor {
		t.Errorf("CGPU_MAX_GPU_MINOR %d, MaxGPUMinor %d", got, MaxGPUMinor)
	}
	if got := c.Num(t, "CGPU_MEM_LIMIT_MAX"); got != MaxMemory {
		t.Errorf("CGPU_MEM_LIMIT_MAX %d, MaxMemory %d", got, MaxMemory)
	}

	b, err := os.ReadFile(uapiHeader)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Instance names: 1\.\.(\d+) characters of \[([^\]]+)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s no longer says \"Instance names: 1..N characters of [...]\": state the rule there, then here", uapiHeader)
	}
	if n, _ := strconv.Atoi(string(m[1])); n != KernelNameMax {
		t.Errorf("the header's names are 1..%d characters, KernelNameMax %d", n, KernelNameMax)
	}
	if string(m[2]) != NameChars {
		t.Errorf("the header's name alphabet [%s], NameChars [%s]", m[2], NameChars)
	}
	if !strings.Contains(string(b), "0.."+strconv.Itoa(MaxGPUMinor)+".") {
		t.Errorf("the header does not state GPU minors as 0..%d", MaxGPUMinor)
	}
}

// TestNameCharIsNameChars holds the byte test to the stated alphabet.
func TestNameCharIsNameChars(t *testing.T) {
	re := regexp.MustCompile(`^[` + NameChars + `]$`)
	for c := 0; c < 256; c++ {
		if got, want := NameChar(byte(c)), re.Match([]byte{byte(c)}); got != want {
			t.Errorf("NameChar(%#02x) = %v, [%s] says %v", c, got, NameChars, want)
		}
	}
}

func TestValidName(t *testing.T) {
	long := strings.Repeat("a", NameMax)
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"job-1_x.y", true},
		{long, true},
		{long + "a", false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a b", false},
		{"a/b", false},
		{"é", false},
		{"a\x00", false},
	} {
		if err := ValidName(c.name); (err == nil) != c.ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", c.name, err, c.ok)
		}
	}
	// What the daemon asks of cgpu.ko for the longest name on the last GPU.
	if err := ValidKernelName(long + "." + strconv.Itoa(MaxGPUMinor)); err != nil {
		t.Errorf("the kernel name of a %d-character instance: %v", NameMax, err)
	}
	if err := ValidKernelName(strings.Repeat("k", KernelNameMax)); err != nil {
		t.Errorf("a %d-character kernel name: %v", KernelNameMax, err)
	}
	if err := ValidKernelName(strings.Repeat("k", KernelNameMax+1)); err == nil {
		t.Errorf("a %d-character kernel name is accepted", KernelNameMax+1)
	}
}

func TestValidMemory(t *testing.T) {
	for m, ok := range map[uint64]bool{0: false, 1: true, 4 << 30: true, MaxMemory: true, MaxMemory + 1: false, 1 << 50: false} {
		if err := ValidMemory(m); (err == nil) != ok {
			t.Errorf("ValidMemory(%d) = %v, want ok %v", m, err, ok)
		}
	}
}
