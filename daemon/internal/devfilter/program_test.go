package devfilter

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/asm"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the programs built now")

// program builds the filter of allow and d, failing the test if it cannot.
func program(t *testing.T, allow []uint32, d devices) asm.Instructions {
	t.Helper()
	rs, err := rules(allow, d)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := instructions(rs)
	if err != nil {
		t.Fatal(err)
	}
	return insts
}

// The programs' instruction listings, checked against golden files so a
// change of the bytecode shows in review. Regenerate with
// go test ./daemon/internal/devfilter -run TestProgramGolden -update.
func TestProgramGolden(t *testing.T) {
	all := devices{uvmToolsMajor: 236, cgpuMajor: 10, cgpuMinor: 122}
	for _, tc := range []struct {
		name  string
		allow []uint32
		devs  devices
	}{
		{"no-gpu", nil, all},
		{"gpu0", []uint32{0}, all},
		{"gpus-3-1-dup", []uint32{3, 1, 3}, all},
		{"gpu0-no-uvm-no-cgpu", []uint32{0}, devices{}},
		{"last-gpu", []uint32{247}, devices{uvmToolsMajor: 511, cgpuMajor: 10, cgpuMinor: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insts := program(t, tc.allow, tc.devs)
			got := insts.String()
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("program differs from %s (run with -update if intended):\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

// run executes the marshalled program on one device access the way the
// kernel would, for the few opcodes the builder emits; the kernel itself
// cannot test-run device programs (BPF_PROG_TEST_RUN), so this checks the
// bytes that are loaded, jump offsets included, on the host.
func run(t *testing.T, insts asm.Instructions, devType, access, major, minor uint32) bool {
	t.Helper()
	var buf bytes.Buffer
	if err := insts.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	code := buf.Bytes()
	ctx := make([]byte, 12)
	binary.LittleEndian.PutUint32(ctx[0:], access<<16|devType)
	binary.LittleEndian.PutUint32(ctx[4:], major)
	binary.LittleEndian.PutUint32(ctx[8:], minor)
	var reg [11]uint64
	for pc, steps := 0, 0; ; pc, steps = pc+1, steps+1 {
		if pc < 0 || 8*pc+8 > len(code) || steps > len(code) {
			t.Fatalf("pc %d out of the program (or a loop)", pc)
		}
		in := code[8*pc : 8*pc+8]
		op, dst, src := in[0], in[1]&0xf, in[1]>>4
		off := int(int16(binary.LittleEndian.Uint16(in[2:])))
		imm := uint64(int64(int32(binary.LittleEndian.Uint32(in[4:]))))
		jump := func(cond bool) {
			if cond {
				pc += off
			}
		}
		switch op {
		case 0x61: // ldxw dst, [src+off]
			if src != 1 || off < 0 || off+4 > len(ctx) || off%4 != 0 {
				t.Fatalf("insn %d: load from r%d%+d", pc, src, off)
			}
			reg[dst] = uint64(binary.LittleEndian.Uint32(ctx[off:]))
		case 0x54: // and32 dst, imm
			reg[dst] = uint64(uint32(reg[dst]) & uint32(imm))
		case 0xb7: // mov dst, imm
			reg[dst] = imm
		case 0x05: // ja
			jump(true)
		case 0x15: // jeq dst, imm
			jump(reg[dst] == imm)
		case 0x55: // jne dst, imm
			jump(reg[dst] != imm)
		case 0x25: // jgt dst, imm
			jump(reg[dst] > imm)
		case 0xa5: // jlt dst, imm
			jump(reg[dst] < imm)
		case 0x95: // exit
			return reg[0] != 0
		default:
			t.Fatalf("insn %d: opcode %#x not emulated", pc, op)
		}
	}
}

func TestProgramVerdicts(t *testing.T) {
	const (
		char, block           = 2, 1
		mknod, read, write    = 1, 2, 4
		uvm, cgpuMaj, cgpuMin = 236, 10, 122
	)
	devs := devices{uvmToolsMajor: uvm, cgpuMajor: cgpuMaj, cgpuMinor: cgpuMin}
	for _, tc := range []struct {
		name         string
		allow        []uint32
		devs         devices
		typ, acc     uint32
		major, minor uint32
		want         bool
	}{
		{"assigned GPU", []uint32{0}, devs, char, read | write, 195, 0, true},
		{"other GPU", []uint32{0}, devs, char, read | write, 195, 1, false},
		{"other GPU mknod", []uint32{0}, devs, char, mknod, 195, 1, false},
		{"last GPU minor", []uint32{0}, devs, char, read, 195, 247, false},
		{"last GPU minor assigned", []uint32{247}, devs, char, read, 195, 247, true},
		{"unused minor (no driver node), the runtime's call", []uint32{0}, devs, char, read, 195, 248, true},
		{"no GPU assigned", nil, devs, char, read, 195, 0, false},
		{"two assigned, first", []uint32{3, 1}, devs, char, read, 195, 1, true},
		{"two assigned, second", []uint32{3, 1}, devs, char, read, 195, 3, true},
		{"two assigned, between", []uint32{3, 1}, devs, char, read, 195, 2, false},
		{"nvidia-modeset", []uint32{0}, devs, char, read | write, 195, 254, true},
		{"nvidiactl", nil, devs, char, read | write, 195, 255, true},
		{"nvidia-uvm", []uint32{0}, devs, char, read | write, uvm, 0, true},
		{"nvidia-uvm-tools", []uint32{0}, devs, char, read, uvm, 1, false},
		{"uvm major, minor 2", []uint32{0}, devs, char, read, uvm, 2, true},
		{"uvm-tools, uvm not resolved", []uint32{0}, devices{}, char, read, uvm, 1, true},
		{"cgpu", []uint32{0}, devs, char, read | write, cgpuMaj, cgpuMin, false},
		{"other misc device", []uint32{0}, devs, char, read | write, cgpuMaj, cgpuMin + 1, true},
		{"/dev/null", []uint32{0}, devs, char, read | write, 1, 3, true},
		{"block device 195:1", []uint32{0}, devs, block, read, 195, 1, true},
		{"block device at cgpu's number", []uint32{0}, devs, block, read, cgpuMaj, cgpuMin, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insts := program(t, tc.allow, tc.devs)
			if got := run(t, insts, tc.typ, tc.acc, tc.major, tc.minor); got != tc.want {
				t.Errorf("%d:%d (type %d, access %d) allowed = %v, want %v\n%v", tc.major, tc.minor, tc.typ, tc.acc, got, tc.want, insts)
			}
		})
	}
}

// A rule over a range of minors that does not start at 0, with a hole:
// the builder's JLT/JGT path, which the rule set of today does not use.
func TestRangeRuleVerdicts(t *testing.T) {
	insts, err := instructions([]rule{{name: "r", major: 7, first: 2, last: 5, except: []uint32{3}}})
	if err != nil {
		t.Fatal(err)
	}
	for minor, want := range map[uint32]bool{0: true, 1: true, 2: false, 3: true, 4: false, 5: false, 6: true} {
		if got := run(t, insts, 2, 2, 7, minor); got != want {
			t.Errorf("7:%d allowed = %v, want %v", minor, got, want)
		}
	}
	if !run(t, insts, 2, 2, 8, 2) {
		t.Error("8:2 denied by a rule for major 7")
	}
}

func TestRulesErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow []uint32
	}{
		{"first unused minor", []uint32{248}},
		{"modeset minor", []uint32{254}},
		{"nvidiactl minor", []uint32{0, 255}},
		{"huge", []uint32{1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := rules(tc.allow, devices{}); err == nil {
				t.Errorf("rules(%v) = nil error", tc.allow)
			}
		})
	}
}

func TestInstructionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []rule
	}{
		{"empty label", []rule{{major: 1}}},
		{"reserved label", []rule{{name: "deny", major: 1}}},
		{"duplicate label", []rule{{name: "a", major: 1}, {name: "a", major: 2}}},
		{"reversed range", []rule{{name: "a", major: 1, first: 5, last: 4}}},
		{"exception outside", []rule{{name: "a", major: 1, first: 0, last: 4, except: []uint32{5}}}},
		{"major too big", []rule{{name: "a", major: 1 << 31}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := instructions(tc.rules); err == nil {
				t.Errorf("instructions(%+v) = nil error", tc.rules)
			}
		})
	}
}
