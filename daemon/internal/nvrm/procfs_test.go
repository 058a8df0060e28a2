package nvrm

import (
	"errors"
	"reflect"
	"testing"
)

func TestReadDriverInfoFixture(t *testing.T) {
	info, err := ReadDriverInfo("testdata/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := DriverInfo{
		Version: "595.45.04",
		GPUs: []ProcGPU{
			{BusID: "0000:01:00.0", Model: "NVIDIA A100-SXM4-40GB", UUID: "GPU-00c4d8e2-7b1f-4e0a-8c3d-6f5e4d3c2b1a", Minor: 0, Excluded: true},
			{BusID: "0000:41:00.0", Model: "NVIDIA A100-SXM4-40GB", UUID: "GPU-5b1a7c3e-0f2d-4c6b-9a8e-1d2c3b4a5f60", Minor: 1},
		},
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("got  %+v\nwant %+v", info, want)
	}
	if info.Major() != 595 {
		t.Errorf("Major() = %d", info.Major())
	}
}

func TestReadDriverInfoProprietaryVersionLine(t *testing.T) {
	info, err := ReadDriverInfo("testdata/proc535")
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != "535.104.05" || info.Major() != 535 || len(info.GPUs) != 0 {
		t.Errorf("got %+v", info)
	}
}

func TestReadDriverInfoNoDriver(t *testing.T) {
	if _, err := ReadDriverInfo(t.TempDir()); !errors.Is(err, ErrNoDriver) {
		t.Errorf("err = %v, want ErrNoDriver", err)
	}
}

func TestParseVersionErrors(t *testing.T) {
	for _, text := range []string{"", "GCC version: 12\n", "NVRM version: no number here\n"} {
		if v, err := ParseVersion(text); err == nil {
			t.Errorf("ParseVersion(%q) = %q, want error", text, v)
		}
	}
}

func TestParseInformationErrors(t *testing.T) {
	for name, text := range map[string]string{
		"no minor":    "Model: \t\t X\n",
		"bad minor":   "Device Minor: \t zero\n",
		"minor range": "Device Minor: \t 255\n",
	} {
		if _, err := ParseInformation("0000:01:00.0", text); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}
