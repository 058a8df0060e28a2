package instance

import (
	"strings"
	"testing"
)

func TestOurKernelName(t *testing.T) {
	long := strings.Repeat("n", 48)
	for k, ours := range map[string]bool{
		kernelName("a", 0):    true,
		kernelName(long, 247): true,
		kernelName("a.b", 12): true,
		"a":                   false,
		"a.":                  false,
		"a.1234":              false,
		"a.1x":                false,
		"..0":                 false, // "." is no instance name
		long + "n.0":          false, // nor 49 characters
		"a b.0":               false,
	} {
		if got := ourKernelName(k); got != ours {
			t.Errorf("ourKernelName(%q) = %v, want %v", k, got, ours)
		}
	}
}
