package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/internal/integration"
)

// Filesystem magics (statfs f_type), from linux/magic.h.
const (
	cgroup2Magic = 0x63677270
	tmpfsMagic   = 0x01021994
	bpffsMagic   = 0xcafe4a11
)

// The NVIDIA driver majors whose ioctl layouts cgpu.ko knows (kmod/nv_abi.h:
// the 535 layouts and those from 550 on), newest tested last.
const (
	driverMinMajor = 535
	driverMaxMajor = 595
)

// Check results.
const (
	checkOK   = "OK"
	checkWarn = "WARN"
	checkFail = "FAIL"
)

// checkResult is one line of doctor.
type checkResult struct {
	Name   string `json:"name"`
	Status string `json:"status"` // OK, WARN or FAIL
	Detail string `json:"detail"`
	// Fix says what to do; empty when Status is OK.
	Fix string `json:"fix,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that this host is ready for cgpu; each line OK or what to fix",
		Long: `Check the host the way a support engineer would: cgpu.ko loaded and its
version, the NVIDIA driver present and within the supported range, cgroup v2,
bpffs, cgpud answering on its socket, the kubelet's CPU manager policy, the CDI
spec and the OCI hooks file. Exits 1 if any check fails (WARN does not fail).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			res := a.doctor(cmd)
			if out == "json" {
				if err := writeJSON(a.Stdout, res); err != nil {
					return err
				}
			} else if err := writeChecks(a.Stdout, res); err != nil {
				return err
			}
			for _, r := range res {
				if r.Status == checkFail {
					return exitError{ExitError, errSilent}
				}
			}
			return nil
		},
	}
	outputFlag(cmd, &out)
	return cmd
}

func writeChecks(w io.Writer, res []checkResult) error {
	t := &table{}
	for _, r := range res {
		line := r.Detail
		if r.Fix != "" {
			line += "; fix: " + r.Fix
		}
		t.add(r.Status, r.Name, line)
	}
	return t.write(w)
}

func (a *app) doctor(cmd *cobra.Command) []checkResult {
	return []checkResult{
		a.checkModule(),
		a.checkDriver(),
		a.checkFS("cgroup", "/fs/cgroup", cgroup2Magic, "cgroup v2",
			"boot with systemd.unified_cgroup_hierarchy=1 (cgpu binds slices to cgroup v2 only)"),
		a.checkFS("bpffs", "/fs/bpf", bpffsMagic, "bpffs",
			"mount -t bpf bpf /sys/fs/bpf (cgpud pins its device filters there)"),
		a.checkDaemon(cmd),
		a.checkKubelet(),
		a.checkFile("cdi", filepath.Join(a.Paths.CDIDir, integration.CDIFile), "CDI spec", validateCDI),
		a.checkFile("hooks", filepath.Join(a.Paths.HooksDir, integration.HooksFile), "OCI hooks file", validateHooks),
	}
}

func (a *app) checkModule() checkResult {
	r := checkResult{Name: "module"}
	p := filepath.Join(a.Paths.Proc, "cgpu_km", "version")
	b, err := os.ReadFile(p)
	if err != nil {
		r.Status, r.Detail = checkFail, "cgpu.ko is not loaded ("+p+" unreadable)"
		r.Fix = "modprobe cgpu (installed by the cgpu-dkms package; check `dkms status`)"
		return r
	}
	r.Status, r.Detail = checkOK, "cgpu.ko "+strings.TrimSpace(string(b))+" loaded"
	// A driver module cgpu.ko cannot hook makes it refuse every attach
	// (fail closed): /proc/cgpu_km/hooks names the module and the symbol.
	hooks, err := os.ReadFile(filepath.Join(a.Paths.Proc, "cgpu_km", "hooks"))
	if err != nil {
		return r
	}
	for _, line := range strings.Split(string(hooks), "\n") {
		if strings.Contains(line, "cannot be hooked") {
			r.Status, r.Detail = checkFail, "cgpu.ko "+strings.TrimSpace(string(b))+": "+line
			r.Fix = "this NVIDIA driver's entry points are not the ones cgpu.ko knows: install a cgpu release that supports this driver branch " +
				"(slices are refused until then; containers without a slice are not affected)"
			return r
		}
	}
	return r
}

func (a *app) checkDriver() checkResult {
	r := checkResult{Name: "driver"}
	ver, gpus, err := a.driver()
	if err != nil {
		r.Status, r.Detail = checkFail, "NVIDIA driver: "+err.Error()
		r.Fix = fmt.Sprintf("install and load an NVIDIA driver %d..%d (modprobe nvidia nvidia-uvm)", driverMinMajor, driverMaxMajor)
		return r
	}
	maj, _ := strconv.Atoi(strings.SplitN(ver, ".", 2)[0])
	detail := fmt.Sprintf("NVIDIA driver %s, %d GPU(s)", ver, gpus)
	switch {
	case maj < driverMinMajor:
		r.Status, r.Detail = checkFail, detail+fmt.Sprintf(", older than the oldest supported (%d)", driverMinMajor)
		r.Fix = fmt.Sprintf("upgrade the NVIDIA driver to %d..%d", driverMinMajor, driverMaxMajor)
	case maj > driverMaxMajor:
		r.Status, r.Detail = checkWarn, detail+fmt.Sprintf(", newer than the newest tested (%d)", driverMaxMajor)
		r.Fix = "check cgpu's release notes for this driver; cgpu.ko refuses layouts it does not know"
	default:
		r.Status, r.Detail = checkOK, detail
	}
	return r
}

func (a *app) checkFS(name, rel string, magic int64, what, fix string) checkResult {
	r := checkResult{Name: name}
	p := a.Paths.Sys + rel
	m, err := a.Statfs(p)
	switch {
	case err != nil:
		r.Status, r.Detail, r.Fix = checkFail, fmt.Sprintf("%s: %v", p, err), fix
	case m != magic:
		r.Status, r.Detail, r.Fix = checkFail, fmt.Sprintf("%s is not %s (filesystem magic %#x)", p, what, m), fix
	default:
		r.Status, r.Detail = checkOK, what+" at "+p
	}
	return r
}

func (a *app) checkDaemon(cmd *cobra.Command) checkResult {
	r := checkResult{Name: "daemon"}
	c := a.client()
	defer c.Close()
	h, err := c.Health(ctxOf(cmd))
	switch {
	case v1.IsUnreachable(err):
		r.Status, r.Detail, r.Fix = checkFail, "cgpud not answering on "+a.socket, "systemctl start cgpud (journalctl -u cgpud says why it stopped)"
	case err != nil:
		r.Status, r.Detail, r.Fix = checkFail, "cgpud on "+a.socket+": "+oneLine(err.Error()), "journalctl -u cgpud"
	case h.Status != "ok":
		var bad []string
		for _, c := range h.Checks {
			if !c.OK {
				bad = append(bad, c.Name+": "+c.Message)
			}
		}
		r.Status, r.Detail = checkFail, "cgpud is "+h.Status+": "+strings.Join(bad, "; ")
		r.Fix = "fix the checks named, then systemctl restart cgpud"
	default:
		r.Status, r.Detail = checkOK, "cgpud answering on "+a.socket
	}
	return r
}

// checkKubelet refuses the static CPU manager policy: the seed's cGPU does not
// support it, and we keep that limitation until it is tested.
func (a *app) checkKubelet() checkResult {
	r := checkResult{Name: "kubelet"}
	p := filepath.Join(a.Paths.KubeletDir, "cpu_manager_state")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		r.Status, r.Detail = checkOK, "no kubelet CPU manager state (not a Kubernetes node, or policy none)"
		return r
	}
	if err != nil {
		r.Status, r.Detail, r.Fix = checkWarn, "read "+p+": "+err.Error(), "run doctor as root"
		return r
	}
	var st struct {
		PolicyName string `json:"policyName"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		r.Status, r.Detail, r.Fix = checkWarn, p+": not JSON ("+err.Error()+")", "check the kubelet's --cpu-manager-policy"
		return r
	}
	if st.PolicyName == "static" {
		r.Status, r.Detail = checkFail, "kubelet CPU manager policy is static"
		r.Fix = "set the kubelet's cpuManagerPolicy to none, remove " + p + " and restart the kubelet (cgpu does not support static)"
		return r
	}
	r.Status, r.Detail = checkOK, "kubelet CPU manager policy "+st.PolicyName
	return r
}

func (a *app) checkFile(name, p, what string, validate func(string) error) checkResult {
	r := checkResult{Name: name}
	if _, err := os.Stat(p); err != nil {
		r.Status, r.Detail = checkFail, what+" missing ("+p+")"
		r.Fix = "cgpuctl setup (or restart cgpud, which writes it)"
		return r
	}
	if err := validate(p); err != nil {
		r.Status, r.Detail = checkFail, what+" "+p+" invalid: "+oneLine(err.Error())
		r.Fix = "cgpuctl setup rewrites it"
		return r
	}
	r.Status, r.Detail = checkOK, what+" "+p
	return r
}

func validateCDI(p string) error { return integration.ValidateCDIFile(p) }

func validateHooks(p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	return integration.ValidateHooks(b)
}

// driver reads the version from /proc/driver/nvidia/version ("NVRM version:
// NVIDIA UNIX ... Kernel Module  595.45.04  ...": the first field shaped like
// a version) and counts /proc/driver/nvidia/gpus. Parsed here rather than
// with internal/nvrm so that the hook, which shares this binary, does not
// pay for its regexp at every container start.
func (a *app) driver() (string, int, error) {
	dir := filepath.Join(a.Paths.Proc, "driver", "nvidia")
	b, err := os.ReadFile(filepath.Join(dir, "version"))
	if err != nil {
		return "", 0, fmt.Errorf("not loaded (%v)", err)
	}
	gpus, _ := os.ReadDir(filepath.Join(dir, "gpus"))
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "NVRM version:") {
			continue
		}
		for _, f := range strings.Fields(line) {
			parts := strings.Split(f, ".")
			if len(parts) < 2 || len(parts) > 3 {
				continue
			}
			ok := true
			for _, p := range parts {
				if _, err := strconv.Atoi(p); err != nil || p == "" {
					ok = false
				}
			}
			if ok {
				return f, len(gpus), nil
			}
		}
		return "", 0, fmt.Errorf("no version number in %q", line)
	}
	return "", 0, errors.New("no 'NVRM version:' line in " + filepath.Join(dir, "version"))
}
