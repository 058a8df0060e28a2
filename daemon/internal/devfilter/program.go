package devfilter

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf/asm"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// The context of a BPF_PROG_TYPE_CGROUP_DEVICE program is
// struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; }
// (include/uapi/linux/bpf.h); access_type holds the device type in its low
// 16 bits and the access (mknod, read, write) in its high 16 bits.
const (
	ctxAccessType = 0
	ctxMajor      = 4
	ctxMinor      = 8

	devTypeChar = 2 // BPF_DEVCG_DEV_CHAR

	// The register each field is kept in for the whole program.
	regType  = asm.R2
	regMajor = asm.R4
	regMinor = asm.R5

	labelAllow = "allow"
	labelDeny  = "deny"
)

// rule denies every access to the character devices major:first..last,
// except the minors in except. All rules deny: the program's only job is
// to take away, the runtime's own program decides everything else.
type rule struct {
	name        string // block label; unique within a program
	major       uint32
	first, last uint32
	except      []uint32 // sorted, unique, within first..last
}

// instructions builds the program: a prologue that loads the context and
// lets everything but character devices through, one labelled block per
// rule that jumps to "deny" on a match and falls through to the next block
// otherwise, and the two verdicts. The registers hold zero-extended u32
// values, so 64-bit compares against non-negative immediates are exact.
func instructions(rules []rule) (asm.Instructions, error) {
	insts := asm.Instructions{
		asm.LoadMem(regType, asm.R1, ctxAccessType, asm.Word).WithSymbol("prologue"),
		asm.And.Imm32(regType, 0xffff),
		asm.LoadMem(regMajor, asm.R1, ctxMajor, asm.Word),
		asm.LoadMem(regMinor, asm.R1, ctxMinor, asm.Word),
		asm.JNE.Imm(regType, devTypeChar, labelAllow),
	}
	seen := map[string]bool{}
	for i, r := range rules {
		if r.name == "" || r.name == labelAllow || r.name == labelDeny || r.name == "prologue" || seen[r.name] {
			return nil, fmt.Errorf("rule %d: bad or duplicate label %q", i, r.name)
		}
		seen[r.name] = true
		if r.first > r.last || r.last > maxImm || r.major > maxImm {
			return nil, fmt.Errorf("rule %s: bad range %d:%d-%d", r.name, r.major, r.first, r.last)
		}
		next := labelAllow
		if i+1 < len(rules) {
			next = rules[i+1].name
		}
		block := asm.Instructions{asm.JNE.Imm(regMajor, int32(r.major), next)}
		switch {
		case r.first == r.last:
			block = append(block, asm.JNE.Imm(regMinor, int32(r.first), next))
		case r.first > 0:
			block = append(block, asm.JLT.Imm(regMinor, int32(r.first), next))
			fallthrough
		default:
			block = append(block, asm.JGT.Imm(regMinor, int32(r.last), next))
		}
		for _, m := range r.except {
			if m < r.first || m > r.last {
				return nil, fmt.Errorf("rule %s: exception %d outside %d-%d", r.name, m, r.first, r.last)
			}
			block = append(block, asm.JEq.Imm(regMinor, int32(m), next))
		}
		block = append(block, asm.Ja.Label(labelDeny))
		block[0] = block[0].WithSymbol(r.name)
		insts = append(insts, block...)
	}
	insts = append(insts,
		asm.Mov.Imm(asm.R0, 1).WithSymbol(labelAllow),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(labelDeny),
		asm.Return(),
	)
	return insts, nil
}

// maxImm bounds majors and minors: the kernel's are 12 and 20 bits, and
// an immediate is a signed 32-bit number.
const maxImm = 1<<31 - 1

// devices are the numbers a filter needs, resolved on the host at the time
// of Apply. A zero major means the device is not registered now and its
// rule is left out.
type devices struct {
	uvmToolsMajor uint32 // nvidia-uvm's major; uvm-tools is minor 1
	cgpuMajor     uint32 // misc (10) on every kernel, read anyway
	cgpuMinor     uint32
}

const (
	nvidiaMajor   = 195            // NVIDIA's fixed character major
	nvidiaGPUMax  = v1.MaxGPUMinor // /dev/nvidiaN; 248..253 unused, 254 nvidia-modeset, 255 nvidiactl
	uvmToolsMinor = 1              // /dev/nvidia-uvm-tools; minor 0 is /dev/nvidia-uvm
)

// rules turns the GPUs a container may use and the host's device numbers
// into the deny rules, in a fixed order so the program is reproducible.
func rules(allow []uint32, d devices) ([]rule, error) {
	ex := slices.Clone(allow)
	slices.Sort(ex)
	ex = slices.Compact(ex)
	for _, m := range ex {
		if m > nvidiaGPUMax {
			return nil, fmt.Errorf("GPU minor %d: GPU nodes are 0..%d", m, nvidiaGPUMax)
		}
	}
	rs := []rule{{name: "gpus", major: nvidiaMajor, first: 0, last: nvidiaGPUMax, except: ex}}
	if d.uvmToolsMajor != 0 {
		rs = append(rs, rule{name: "uvm_tools", major: d.uvmToolsMajor, first: uvmToolsMinor, last: uvmToolsMinor})
	}
	if d.cgpuMajor != 0 {
		rs = append(rs, rule{name: "cgpu", major: d.cgpuMajor, first: d.cgpuMinor, last: d.cgpuMinor})
	}
	return rs, nil
}
