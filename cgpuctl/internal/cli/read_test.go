package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestOutputFormatChecked runs every command withOutput builds with a bad
// -o: each refuses it as a usage error before asking the daemon.
func TestOutputFormatChecked(t *testing.T) {
	f := newFakeDaemon(t)
	for _, argv := range [][]string{
		{"inspect"},
		{"gpu", "ls"},
		{"instance", "ls"},
		{"instance", "show", "train"},
		{"instance", "create", "--container", "c", "--cgroup", "/c", "--memory", "1"},
		{"instance", "resize", "train", "--memory", "1"},
		{"status"},
	} {
		before := len(f.requests())
		r := run(t, f.socket, "", append(argv, "-o", "yaml")...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, `--output "yaml": want table or json`) {
			t.Errorf("%v -o yaml: exit %d, stderr %q", argv, r.code, r.stderr)
		}
		if n := len(f.requests()); n != before {
			t.Errorf("%v -o yaml asked the daemon %d times", argv, n-before)
		}
	}
}

func TestListOfNothingIsEmptyJSON(t *testing.T) {
	l, err := list([]string(nil), nil)
	if err != nil || l == nil {
		t.Fatalf("list(nil, nil) = %#v, %v", l, err)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, l); err != nil || b.String() != "[]\n" {
		t.Errorf("JSON of no items %q, %v", b.String(), err)
	}
	boom := errors.New("boom")
	if _, err := list([]string(nil), boom); err != boom {
		t.Errorf("list kept the error as %v", err)
	}
}
