package cli

import (
	"errors"
	"strings"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// Exit codes scripts can rely on; `cgpuctl --help` lists them.
const (
	ExitOK          = 0 // success; doctor: every check passed
	ExitError       = 1 // any other failure (the daemon refused, a hook failed, a doctor check failed)
	ExitUsage       = 2 // bad command line
	ExitUnreachable = 3 // cgpud is not answering on its socket
	ExitNotFound    = 4 // the named instance (or GPU) does not exist
)

const exitCodesHelp = `Exit codes:
  0  success
  1  error (the daemon refused the request, a hook failed, a doctor check failed)
  2  usage error (unknown command or flag, bad argument)
  3  cgpud unreachable on its socket
  4  not found (no such instance or GPU)`

// usageError marks a bad command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an explicit exit code for an error already explained.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// errSilent is returned when the command has already printed why it failed
// (doctor's failed checks): exit non-zero without another line.
var errSilent = errors.New("")

// ExitCode maps an error from a command to the process exit status.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage
	}
	if v1.IsUnreachable(err) {
		return ExitUnreachable
	}
	if v1.IsNotFound(err) {
		return ExitNotFound
	}
	return ExitError
}

// isCobraUsage recognises the errors cobra makes itself for a bad command
// line (it has no types for them).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
