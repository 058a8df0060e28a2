package config

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// shipped is the file the packages install as /etc/cgpu/cgpud.toml.
const shipped = "../../../packaging/cgpud.toml"

// assignment matches a key = value line, commented out ("# key = ...") or
// not; prose comments do not start with a lower-case key and " = ".
var assignment = regexp.MustCompile(`^(#\s?)?([a-z][a-z0-9_]*) = (.*)$`)

// TestShippedFileIsTheDefaults holds packaging/cgpud.toml to Default():
// installed as it is, it changes nothing; every key it shows (commented
// out or not) carries the compiled-in default and has a comment above it;
// every key of Config is shown.
func TestShippedFileIsTheDefaults(t *testing.T) {
	c, err := LoadFile(shipped)
	if err != nil {
		t.Fatalf("the shipped config: %v", err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("%s as shipped differs from the defaults in %v", shipped, c.Changed(Default()))
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}

	f, err := os.Open(shipped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var doc strings.Builder
	shown := map[string]bool{}
	prose := false // a comment that is not a key line came since the last blank line
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := assignment.FindStringSubmatch(line); m != nil {
			if !prose {
				t.Errorf("%s:%d: %s has no comment saying what it does", shipped, n, m[2])
			}
			shown[m[2]] = true
			doc.WriteString(m[2] + " = " + m[3] + "\n")
			continue
		}
		switch {
		case strings.TrimSpace(line) == "":
			prose = false
		case strings.HasPrefix(line, "#"):
			prose = true
		default:
			t.Errorf("%s:%d: neither a comment nor a key line: %q", shipped, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	// With every key line uncommented the file must still be the defaults:
	// an unknown key, a bad value or a stale default fails here.
	all, err := Decode(strings.NewReader(doc.String()), shipped+" (every key uncommented)")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all, Default()) {
		t.Errorf("%s documents values other than the defaults for %v", shipped, all.Changed(Default()))
	}

	// Decode refused unknown and repeated keys; now every key is there.
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		if key := typ.Field(i).Tag.Get("toml"); !shown[key] {
			t.Errorf("%s does not show %s", shipped, key)
		}
	}
}
