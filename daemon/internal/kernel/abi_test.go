package kernel

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/cgpu-dev/cgpu/daemon/internal/ctest"
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
// constant.
func probe(t *testing.T) ctest.Result {
	t.Helper()
	p := ctest.New("../../../kmod/include/uapi/cgpu.h")
	for _, m := range mirrors {
		p.Num(m.c+".sizeof", "sizeof(struct "+m.c+")")
		typ := reflect.TypeOf(m.v)
		for i := range typ.NumField() {
			cf := typ.Field(i).Tag.Get("c")
			if cf == "" {
				t.Fatalf("%s.%s has no c tag", typ, typ.Field(i).Name)
			}
			p.Num(m.c+"."+cf+".offset", "offsetof(struct "+m.c+", "+cf+")")
			p.Num(m.c+"."+cf+".size", "sizeof(((struct "+m.c+" *)0)->"+cf+")")
		}
	}
	for name := range constants {
		p.Num(name, name)
	}
	p.Str("CGPU_DEVICE_PATH", "CGPU_DEVICE_PATH")
	return p.Run(t)
}

func TestABIMatchesUAPIHeader(t *testing.T) {
	c := probe(t)
	for _, m := range mirrors {
		t.Run(m.c, func(t *testing.T) {
			typ := reflect.TypeOf(m.v)
			if got, want := uint64(typ.Size()), c.Num(t, m.c+".sizeof"); got != want {
				t.Errorf("size: Go %d, C %d", got, want)
			}
			var covered uintptr
			for i := range typ.NumField() {
				f := typ.Field(i)
				cf := f.Tag.Get("c")
				if got, want := uint64(f.Offset), c.Num(t, m.c+"."+cf+".offset"); got != want {
					t.Errorf("%s (%s): Go offset %d, C offset %d", cf, f.Name, got, want)
				}
				if got, want := uint64(f.Type.Size()), c.Num(t, m.c+"."+cf+".size"); got != want {
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
		if got := c.Num(t, name); got != want {
			t.Errorf("%s: C %d, Go %d", name, got, want)
		}
	}
	if c["CGPU_DEVICE_PATH"] != DevicePath {
		t.Errorf("CGPU_DEVICE_PATH %q, Go %q", c["CGPU_DEVICE_PATH"], DevicePath)
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
