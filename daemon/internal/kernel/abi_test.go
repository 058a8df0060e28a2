package kernel

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// mirrors pairs each Go mirror with its C struct in the uapi header.
var mirrors = []struct {
	c string
	v any
}{
	{"cgpu_version", cgpuVersion{}},
	{"cgpu_create", cgpuCreate{}},
	{"cgpu_destroy", cgpuDestroy{}},
	{"cgpu_attach", cgpuAttach{}},
	{"cgpu_set", cgpuSet{}},
	{"cgpu_stats", cgpuStats{}},
	{"cgpu_list", cgpuList{}},
}

// constants pairs each C macro with the Go value that must equal it.
var constants = map[string]uint64{
	"CGPU_ABI_MAJOR":         ABIMajor,
	"CGPU_ABI_MINOR":         ABIMinor,
	"CGPU_NAME_LEN":          NameLen,
	"CGPU_MAX_INST_PER_GPU":  MaxInstPerGPU,
	"CGPU_MAX_GPU_MINOR":     MaxGPUMinor,
	"CGPU_MEM_LIMIT_MAX":     MemLimitMax,
	"CGPU_IOC_MAGIC":         iocMagic,
	"CGPU_DESTROY_FORCE":     destroyForce,
	"CGPU_SET_MEM_LIMIT":     setMemLimit,
	"CGPU_SET_WEIGHT":        setWeight,
	"CGPU_LIST_MAX_CAPACITY": ListMaxCapacity,
	"CGPU_IOC_VERSION":       uint64(iocVersion),
	"CGPU_IOC_CREATE":        uint64(iocCreate),
	"CGPU_IOC_DESTROY":       uint64(iocDestroy),
	"CGPU_IOC_ATTACH":        uint64(iocAttach),
	"CGPU_IOC_DETACH":        uint64(iocDetach),
	"CGPU_IOC_SET":           uint64(iocSet),
	"CGPU_IOC_STATS":         uint64(iocStats),
	"CGPU_IOC_LIST":          uint64(iocList),
}

// probe compiles a C program against the uapi header that prints every
// struct's size, every mirrored field's offset and size, and every
// constant, as "key value" lines.
func probe(t *testing.T) map[string]uint64 {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed: cannot compile the C side of the ABI comparison")
	}
	hdr, err := filepath.Abs("../../../kmod/include/uapi/cgpu.h")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"" + hdr + "\"\nint main(void){\n")
	for _, m := range mirrors {
		fmt := func(key, expr string) {
			src.WriteString(`printf("` + key + ` %llu\n", (unsigned long long)(` + expr + "));\n")
		}
		fmt(m.c+".sizeof", "sizeof(struct "+m.c+")")
		typ := reflect.TypeOf(m.v)
		for i := range typ.NumField() {
			cf := typ.Field(i).Tag.Get("c")
			if cf == "" {
				t.Fatalf("%s.%s has no c tag", typ, typ.Field(i).Name)
			}
			fmt(m.c+"."+cf+".offset", "offsetof(struct "+m.c+", "+cf+")")
			fmt(m.c+"."+cf+".size", "sizeof(((struct "+m.c+" *)0)->"+cf+")")
		}
	}
	for name := range constants {
		src.WriteString(`printf("` + name + ` %llu\n", (unsigned long long)(` + name + "));\n")
	}
	src.WriteString(`printf("CGPU_DEVICE_PATH.len %zu\n", sizeof(CGPU_DEVICE_PATH) - 1);` + "\n")
	src.WriteString(`printf("CGPU_DEVICE_PATH %s\n", CGPU_DEVICE_PATH);` + "\n")
	src.WriteString("return 0;}\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-o", bin, filepath.Join(dir, "probe.c")).CombinedOutput(); err != nil {
		t.Fatalf("compile probe: %v\n%s\n%s", err, out, src.String())
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run probe: %v", err)
	}
	got := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			t.Fatalf("probe line %q", sc.Text())
		}
		if f[0] == "CGPU_DEVICE_PATH" {
			if f[1] != DevicePath {
				t.Errorf("CGPU_DEVICE_PATH %q, Go %q", f[1], DevicePath)
			}
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("probe line %q: %v", sc.Text(), err)
		}
		got[f[0]] = n
	}
	return got
}

func TestABIMatchesUAPIHeader(t *testing.T) {
	c := probe(t)
	for _, m := range mirrors {
		t.Run(m.c, func(t *testing.T) {
			typ := reflect.TypeOf(m.v)
			if got, want := uint64(typ.Size()), c[m.c+".sizeof"]; got != want {
				t.Errorf("size: Go %d, C %d", got, want)
			}
			var covered uintptr
			for i := range typ.NumField() {
				f := typ.Field(i)
				cf := f.Tag.Get("c")
				if got, want := uint64(f.Offset), c[m.c+"."+cf+".offset"]; got != want {
					t.Errorf("%s (%s): Go offset %d, C offset %d", cf, f.Name, got, want)
				}
				if got, want := uint64(f.Type.Size()), c[m.c+"."+cf+".size"]; got != want {
					t.Errorf("%s (%s): Go size %d, C size %d", cf, f.Name, got, want)
				}
				covered += f.Type.Size()
			}
			// Fields that fill the whole struct leave no C field unmirrored.
			if covered != typ.Size() {
				t.Errorf("fields cover %d of %d bytes: a C field is missing or Go padding crept in", covered, typ.Size())
			}
		})
	}
	for name, want := range constants {
		if got, ok := c[name]; !ok || got != want {
			t.Errorf("%s: C %d, Go %d", name, got, want)
		}
	}
	if c["CGPU_DEVICE_PATH.len"] != uint64(len(DevicePath)) {
		t.Errorf("CGPU_DEVICE_PATH length differs")
	}
}

// TestIOWRKnownEncodings pins the encoding on values worked out by hand:
// dir 3 (read|write) << 30, size << 16, 'C' << 8, nr.
func TestIOWRKnownEncodings(t *testing.T) {
	cases := []struct {
		name string
		got  uint
		want uint
	}{
		{"VERSION 48 bytes", iocVersion, 0xC0304301},
		{"CREATE 128 bytes", iocCreate, 0xC0804302},
		{"STATS 176 bytes", iocStats, 0xC0B04307},
		{"LIST 32 bytes", iocList, 0xC0204308},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if unsafe.Sizeof(cgpuStats{}) != 176 {
		t.Errorf("cgpu_stats is %d bytes, the header pins 176", unsafe.Sizeof(cgpuStats{}))
	}
}
