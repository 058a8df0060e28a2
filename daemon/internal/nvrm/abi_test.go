package nvrm

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/cgpu-dev/cgpu/daemon/internal/ctest"
)

// goLayouts pairs each Go mirror with the C struct in kmod/nv_abi.h and the
// fields whose offsets a wrong mirror would silently corrupt.
var goLayouts = []struct {
	c      string
	v      any
	fields map[string]string // Go field -> C field
}{
	{"nva_os00_free", os00Free{}, map[string]string{"HObjectOld": "h_object_old", "Status": "status"}},
	{"nva_os21_alloc", os21Alloc{}, map[string]string{"HClass": "h_class", "PAllocParms": "p_alloc_parms", "ParamsSize": "params_size", "Status": "status"}},
	{"nva_os54_control", os54Control{}, map[string]string{"Cmd": "cmd", "Params": "params", "ParamsSize": "params_size", "Status": "status"}},
	{"nva_rm_api_version", rmAPIVersion{}, map[string]string{"Reply": "reply", "VersionString": "version_string"}},
	{"nva_card_info", cardInfo{}, map[string]string{"PCIDomain": "pci_domain", "PCIBus": "pci_bus", "PCISlot": "pci_slot", "PCIDeviceID": "pci_device_id", "GPUID": "gpu_id", "FBSize": "fb_size", "MinorNumber": "minor_number", "DevName": "dev_name"}},
	{"nva_device_alloc_params", deviceAllocParams{}, map[string]string{"DeviceID": "device_id", "VASpaceSize": "va_space_size", "VAMode": "va_mode"}},
	{"nva_subdevice_alloc_params", subdeviceAllocParams{}, map[string]string{"SubDeviceID": "sub_device_id"}},
	{"nva_gpu_get_id_info_v2", gpuGetIDInfoV2{}, map[string]string{"GPUID": "gpu_id", "DeviceInstance": "device_instance", "SubDeviceInstance": "sub_device_instance"}},
	{"nva_fb_get_info_v2", fbGetInfoV2{}, map[string]string{"FBInfoList": "fb_info_list"}},
}

// TestLayoutsMatchCHeader compiles a probe against kmod/nv_abi.h and
// compares every size and listed offset with the Go mirror.
func TestLayoutsMatchCHeader(t *testing.T) {
	p := ctest.New("../../../kmod/nv_abi.h")
	for _, l := range goLayouts {
		p.Num(l.c+".sizeof", "sizeof(struct "+l.c+")")
		for _, cf := range l.fields {
			p.Num(l.c+"."+cf, "offsetof(struct "+l.c+", "+cf+")")
		}
	}
	c := p.Run(t)
	for _, l := range goLayouts {
		typ := reflect.TypeOf(l.v)
		if got, w := uint64(typ.Size()), c.Num(t, l.c+".sizeof"); got != w {
			t.Errorf("%s: Go size %d, C size %d", l.c, got, w)
		}
		for gf, cf := range l.fields {
			sf, ok := typ.FieldByName(gf)
			if !ok {
				t.Fatalf("%s: no Go field %s", typ, gf)
			}
			if got, w := uint64(sf.Offset), c.Num(t, l.c+"."+cf); got != w {
				t.Errorf("%s.%s: Go offset %d, C offset %d", l.c, cf, got, w)
			}
		}
	}
}

func TestIOWRMatchesDocumentedEncodings(t *testing.T) {
	// The encoded commands docs/nvidia-abi.md §2 lists, as user space builds them.
	cases := []struct {
		name string
		nr   uint32
		size uintptr
		want uint32
	}{
		{"RM_ALLOC NVOS21", EscRMAlloc, unsafe.Sizeof(os21Alloc{}), 0xC020462B},
		{"RM_ALLOC NVOS64", EscRMAlloc, 48, 0xC030462B},
		{"RM_FREE", EscRMFree, unsafe.Sizeof(os00Free{}), 0xC0104629},
		{"RM_CONTROL", EscRMControl, unsafe.Sizeof(os54Control{}), 0xC020462A},
		{"VID_HEAP_CONTROL", EscRMVidHeap, 184, 0xC0B8464A},
		{"CHECK_VERSION_STR", EscCheckVersionStr, unsafe.Sizeof(rmAPIVersion{}), 0xC04846D2},
		{"CARD_INFO one entry", EscCardInfo, unsafe.Sizeof(cardInfo{}), 0xC04846C8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IOWR(c.nr, uint32(c.size)); got != c.want {
				t.Errorf("IOWR(%#x, %d) = %#x, want %#x", c.nr, c.size, got, c.want)
			}
		})
	}
}

func TestFBGetInfoV2SizeByVersion(t *testing.T) {
	for major, want := range map[int]uint32{0: 1028, 595: 1028, 580: 1028, 575: 460, 570: 460, 560: 460, 555: 444, 550: 444, 545: 444, 535: 436, 525: 436} {
		if got := fbGetInfoV2Size(major); got != want {
			t.Errorf("fbGetInfoV2Size(%d) = %d, want %d", major, got, want)
		}
	}
}

func TestStatusString(t *testing.T) {
	if got := StatusNoMemory.String(); got != "NV_ERR_NO_MEMORY" {
		t.Errorf("got %q", got)
	}
	if got := Status(0x1234).String(); got != "NV_ERR_0x00001234" {
		t.Errorf("got %q", got)
	}
}
