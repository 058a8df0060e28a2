package hook

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cgpu-dev/cgpu/internal/contract"
)

// envPolicyKey reads the one key the hook needs, env_policy, from the text
// of cgpud.toml, without a TOML library: BurntSushi/toml's package init
// loads the local time zone, about 0.4 ms that every container start would
// pay, slice or not, since a Go program runs the init of all it links.
// cgpud reads the same file with the library and refuses what TOML or its
// own keys do not allow, so this reading only has to agree with it on the
// files cgpud accepts, and otherwise must never come out weaker: a line
// about env_policy it cannot read, the key twice, or the key after a
// table header (cgpud has no tables, and refuses the file with one; the
// header may also be the inside of a multi-line string) is an error, and
// the hook then fails closed.
func envPolicyKey(text string) (value string, set bool, err error) {
	inTable := false
	for n, line := range strings.Split(strings.TrimPrefix(text, "\ufeff"), "\n") {
		t := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			inTable = true
			continue
		}
		key, rest, ok := strings.Cut(t, "=")
		key = strings.TrimSpace(key)
		quoted := len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0]
		if quoted && strings.ContainsRune(key, '\\') {
			// An escape could spell env_policy; cgpud has no key that needs one.
			return "", false, fmt.Errorf("line %d: cannot read the key %s", n+1, key)
		}
		if !strings.Contains(t, contract.EnvPolicyKey) {
			continue // another key: cgpud's business
		}
		if !ok {
			return "", false, fmt.Errorf("line %d: cannot read %q", n+1, t)
		}
		if quoted {
			key = key[1 : len(key)-1]
		}
		if key != contract.EnvPolicyKey {
			// Another key whose value, or whose bare name, mentions
			// env_policy; a name that is anything else is refused.
			if strings.Contains(key, contract.EnvPolicyKey) && !bareKey(key) {
				return "", false, fmt.Errorf("line %d: cannot read the key %q", n+1, key)
			}
			continue
		}
		if inTable {
			return "", false, fmt.Errorf("line %d: %s after a table header; cgpud reads it at the top of the file only", n+1, contract.EnvPolicyKey)
		}
		if set {
			return "", false, fmt.Errorf("line %d: %s is given twice", n+1, contract.EnvPolicyKey)
		}
		if value, err = tomlString(strings.TrimSpace(rest)); err != nil {
			return "", false, fmt.Errorf("line %d: %s: %v", n+1, contract.EnvPolicyKey, err)
		}
		set = true
	}
	return value, set, nil
}

// tomlString reads a one-line TOML string without escapes ("..." or
// '...'), followed by nothing but a comment.
func tomlString(s string) (string, error) {
	if len(s) < 2 || (s[0] != '"' && s[0] != '\'') {
		return "", errors.New("want a quoted string")
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", errors.New("the string does not end on its line")
	}
	v, after := s[1:1+end], strings.TrimSpace(s[2+end:])
	if strings.ContainsRune(v, '\\') || strings.HasPrefix(s, `"""`) || strings.HasPrefix(s, `'''`) {
		return "", errors.New("want a plain string, without escapes")
	}
	if after != "" && after[0] != '#' {
		return "", fmt.Errorf("%q after the string", after)
	}
	return v, nil
}

// bareKey is true for a TOML bare key: ASCII letters, digits, _ and -.
func bareKey(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return s != ""
}
