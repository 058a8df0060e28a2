package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cgpu-dev/cgpu/internal/contract"
)

// TestEnvPolicy: env_policy is the hook's key in cgpud's file. cgpud
// checks it, offers no flag for it (the hook would never see one), and
// does not ask for a restart when it changes (the hook reads the file).
func TestEnvPolicy(t *testing.T) {
	if Default().EnvPolicy != contract.EnvTrusted {
		t.Errorf("default %q, want %q", Default().EnvPolicy, contract.EnvTrusted)
	}
	for _, tt := range []struct{ doc, err string }{
		{`env_policy = "untrusted"`, ""},
		{`env_policy = "trusted"`, ""},
		{`env_policy = "orchestrated"`, `env_policy: "orchestrated"; "trusted"`},
		{`env_policy = ""`, "env_policy"},
		{`env_policy = 1`, "env_policy"},
	} {
		c, err := Decode(strings.NewReader(tt.doc), "test")
		if tt.err == "" {
			if err != nil || string(c.EnvPolicy) != strings.Trim(strings.TrimPrefix(tt.doc, "env_policy = "), `"`) {
				t.Errorf("%s: %q, %v", tt.doc, c.EnvPolicy, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: err %v, want %q", tt.doc, err, tt.err)
		}
	}
	if _, err := Parse("cgpud", []string{"--env-policy", "untrusted"}, &bytes.Buffer{}); err == nil {
		t.Error("cgpud took --env-policy, which the hook would never see")
	}
	old, n := Default(), Default()
	n.EnvPolicy = contract.EnvUntrusted
	if r := old.NeedRestart(n); len(r) != 0 {
		t.Errorf("a changed env_policy asks for a restart of %v", r)
	}
}
