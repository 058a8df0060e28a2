package hook

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// tomlPolicy is what cgpud's TOML library reads for env_policy.
func tomlPolicy(doc string) (string, bool, error) {
	var c struct {
		EnvPolicy *string `toml:"env_policy"`
	}
	if _, err := toml.Decode(doc, &c); err != nil {
		return "", false, err
	}
	if c.EnvPolicy == nil {
		return "", false, nil
	}
	return *c.EnvPolicy, true, nil
}

// strictness orders readings: a reading may be stricter than cgpud's,
// never weaker.
func strictness(v string, set bool) int {
	if set && v != "trusted" {
		return 1 // untrusted, or a value ParseEnvPolicy refuses (fail closed)
	}
	return 0
}

func TestEnvPolicyKey(t *testing.T) {
	tests := []struct {
		name, doc string
		want      string
		set       bool
		err       string
	}{
		{"no file content", "", "", false, ""},
		{"shipped, commented out", "version = 1\n\n# Whose...\n# env_policy = \"trusted\"\n", "", false, ""},
		{"untrusted", "version = 1\nenv_policy = \"untrusted\"\n", "untrusted", true, ""},
		{"literal string, comment, CRLF", "version = 1\r\n  env_policy='untrusted'   # tenants write env\r\n", "untrusted", true, ""},
		{"quoted key", "\"env_policy\" = \"untrusted\"\n", "untrusted", true, ""},
		{"another key mentions it", "socket = \"/run/env_policy.sock\"\nenv_policy_note = 1\n", "", false, ""},
		{"after a table", "version = 1\n[x]\nenv_policy = \"untrusted\"\n", "", false, "after a table header"},
		{"a table header inside a string", "socket_group = \"\"\"\n[x]\n\"\"\"\nenv_policy = \"untrusted\"\n", "", false, "after a table header"},
		{"a table, no env_policy", "version = 1\n[x]\ny = 1\n", "", false, ""},
		{"byte order mark", "\ufeffenv_policy = \"untrusted\"\n", "untrusted", true, ""},
		{"twice", "env_policy = \"trusted\"\nenv_policy = \"untrusted\"\n", "", false, "given twice"},
		{"no value", "env_policy = \n", "", false, "want a quoted string"},
		{"not a string", "env_policy = 1\n", "", false, "want a quoted string"},
		{"escapes", "env_policy = \"un\\u0074rusted\"\n", "", false, "without escapes"},
		{"escaped key", "\"env\\u005fpolicy\" = \"untrusted\"\n", "", false, "cannot read the key"},
		{"dotted key", "a.env_policy = \"trusted\"\n", "", false, "cannot read the key"},
		{"multi-line string", "env_policy = \"\"\"\nuntrusted\"\"\"\n", "", false, "without escapes"},
		{"junk after", "env_policy = \"untrusted\" x\n", "", false, `"x" after the string`},
		{"no equals", "env_policy\n", "", false, "cannot read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, set, err := envPolicyKey(tt.doc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%q, %v, err %v; want %q", v, set, err, tt.err)
				}
				return
			}
			if err != nil || v != tt.want || set != tt.set {
				t.Fatalf("%q, %v, err %v; want %q, %v", v, set, err, tt.want, tt.set)
			}
			// Where cgpud's library reads the file and finds no table, the
			// two readings agree.
			if tv, tset, terr := tomlPolicy(tt.doc); terr == nil && !strings.Contains(tt.doc, "[") && (tv != v || tset != set) {
				t.Errorf("TOML reads %q, %v; the hook %q, %v", tv, tset, v, set)
			}
		})
	}
}

// FuzzEnvPolicyKey: on any text that cgpud's TOML library reads, the hook's
// reading is never weaker than the library's.
func FuzzEnvPolicyKey(f *testing.F) {
	for _, s := range []string{
		"env_policy = \"untrusted\"\n",
		"version = 1\n# env_policy = \"trusted\"\nenv_policy = 'untrusted' # x\n",
		"s = \"\"\"\nenv_policy = \"trusted\"\n\"\"\"\nenv_policy = \"untrusted\"\n",
		"\"env_policy\" = \"untrusted\"\n",
		"\"env\\u005fpolicy\" = \"untrusted\"\n",
		"g = \"\"\"\n[x]\n\"\"\"\nenv_policy = \"untrusted\"\n",
		"\ufeffenv_policy = \"untrusted\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tv, tset, terr := tomlPolicy(doc)
		if terr != nil {
			return
		}
		v, set, err := envPolicyKey(doc)
		if err != nil {
			return // fail closed
		}
		if strictness(v, set) < strictness(tv, tset) {
			t.Errorf("%q: the hook reads %q (%v), weaker than TOML's %q", doc, v, set, tv)
		}
	})
}
