package contract

import "fmt"

// EnvPolicy says whose a container's environment is on a node, and so how
// far the hook believes it. It is the env_policy key of the node's
// configuration (ConfigFile): cgpud checks it, the hook reads it.
//
// The name asks the one question an admin can answer, "who writes the
// containers' environment here?", rather than naming a mechanism
// ("orchestrated"): a node where tenants choose their env without an
// orchestrator (a CI runner passing users' variables to docker run -e)
// needs the strict reading too, and a node with an orchestrator whose
// users cannot set env does not.
type EnvPolicy string

const (
	// EnvTrusted (the default): the environment is the admin's (docker run
	// -e, ctr run --env, podman run -e), and decides as the contract says,
	// opt-outs included. Annotations are not read.
	EnvTrusted EnvPolicy = "trusted"
	// EnvUntrusted: the environment is the workload's (a pod's author
	// writes it). A slice an orchestrator assigned by annotation
	// (AnnotationMemory) is made as assigned: the environment can neither
	// switch it off nor change its size or weight, and a container whose
	// environment tries is refused. Without an assignment, a container
	// that asks for a slice and switches it off in the same environment
	// while it holds GPU devices is refused rather than run unlimited.
	EnvUntrusted EnvPolicy = "untrusted"
)

// EnvPolicyKey is the key in ConfigFile.
const EnvPolicyKey = "env_policy"

// ConfigFile is the node's configuration, cgpud's file; the hook reads
// EnvPolicyKey from it.
const ConfigFile = "/etc/cgpu/cgpud.toml"

// ParseEnvPolicy checks a value of env_policy.
func ParseEnvPolicy(s string) (EnvPolicy, error) {
	switch p := EnvPolicy(s); p {
	case EnvTrusted, EnvUntrusted:
		return p, nil
	}
	return "", fmt.Errorf("%s = %q: %q or %q", EnvPolicyKey, s, EnvTrusted, EnvUntrusted)
}
