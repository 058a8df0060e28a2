package contract

import (
	"reflect"
	"strings"
	"testing"
)

const gib2 = uint64(1) << 30

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want Request
		ok   bool
		err  string
	}{
		{"unset", []string{"PATH=/bin"}, Request{}, false, ""},
		{"zero is no slice", []string{EnvMem + "=0"}, Request{}, false, ""},
		{"GiB default", []string{EnvMem + "=4"}, Request{Memory: 4 * gib2, MemVar: EnvMem + "=4"}, true, ""},
		{"MiB", []string{EnvMem + "=512", EnvMemUnit + "=MiB"}, Request{Memory: 512 << 20, MemVar: EnvMem + "=512"}, true, ""},
		{"unit case", []string{EnvMem + "=1", EnvMemUnit + "=gib"}, Request{Memory: gib2, MemVar: EnvMem + "=1"}, true, ""},
		{"the same value twice", []string{EnvMem + "=2", EnvMem + "=2"}, Request{Memory: 2 * gib2, MemVar: EnvMem + "=2"}, true, ""},
		{"disabled true", []string{EnvMem + "=4", EnvDisable + "=true"}, Request{}, false, ""},
		{"disabled 1", []string{EnvMem + "=4", EnvDisable + "=1"}, Request{}, false, ""},
		{"disable false", []string{EnvMem + "=4", EnvDisable + "=false"}, Request{Memory: 4 * gib2, MemVar: EnvMem + "=4"}, true, ""},
		{"disable garbage", []string{EnvMem + "=4", EnvDisable + "=maybe"}, Request{}, false, "CGPU_DISABLE=\"maybe\": want true, 1, false or 0"},
		{"not a number", []string{EnvMem + "=four"}, Request{}, false, `ALIYUN_COM_GPU_MEM_CONTAINER="four": want a whole number of GiB`},
		{"negative", []string{EnvMem + "=-4"}, Request{}, false, "want a whole number"},
		{"fraction", []string{EnvMem + "=1.5"}, Request{}, false, "want a whole number"},
		{"overflow", []string{EnvMem + "=99999999999999999"}, Request{}, false, "too large"},
		{"bad unit", []string{EnvMem + "=4", EnvMemUnit + "=GB"}, Request{}, false, `ALIYUN_COM_GPU_MEM_UNIT="GB": want GiB or MiB`},
		{"weight", []string{EnvMem + "=4", EnvWeight + "=3"}, Request{Memory: 4 * gib2, Weight: 3, MemVar: EnvMem + "=4"}, true, ""},
		{"weight zero", []string{EnvMem + "=4", EnvWeight + "=0"}, Request{}, false, "ALIYUN_COM_GPU_SCHD_WEIGHT=\"0\": want an integer of at least 1"},
		{"weight junk", []string{EnvMem + "=4", EnvWeight + "=x"}, Request{}, false, "at least 1"},
		{"dev", []string{EnvMem + "=4", EnvMemDev + "=15"}, Request{Memory: 4 * gib2, DevMemory: 15 * gib2, MemVar: EnvMem + "=4"}, true, ""},
		{"more than the card", []string{EnvMem + "=16", EnvMemDev + "=15"}, Request{}, false, "asks for more than the card's ALIYUN_COM_GPU_MEM_DEV=15"},
		{"dev junk", []string{EnvMem + "=4", EnvMemDev + "=lots"}, Request{}, false, "ALIYUN_COM_GPU_MEM_DEV=\"lots\""},
		{"aliyun devices", []string{EnvMem + "=4", EnvVisible + "=1,0,1"}, Request{Memory: 4 * gib2, GPUs: []string{"1", "0"}, MemVar: EnvMem + "=4"}, true, ""},
		{"uuid", []string{EnvMem + "=4", EnvNVVisible + "=GPU-8f3c-01"}, Request{Memory: 4 * gib2, GPUs: []string{"GPU-8f3c-01"}, MemVar: EnvMem + "=4"}, true, ""},
		{"aliyun over nvidia", []string{EnvMem + "=4", EnvNVVisible + "=all", EnvVisible + "=2"}, Request{Memory: 4 * gib2, GPUs: []string{"2"}, MemVar: EnvMem + "=4"}, true, ""},
		{"cdi over image's nvidia=all", []string{EnvMem + "=4", EnvNVVisible + "=all", EnvCDIGPUPrefix + "10=10", EnvCDIGPUPrefix + "2=2"}, Request{Memory: 4 * gib2, GPUs: []string{"2", "10"}, MemVar: EnvMem + "=4"}, true, ""},
		{"all", []string{EnvMem + "=4", EnvNVVisible + "=all"}, Request{Memory: 4 * gib2, AllGPUs: true, MemVar: EnvMem + "=4"}, true, ""},
		{"none", []string{EnvMem + "=4", EnvNVVisible + "=none"}, Request{}, false, ""},
		{"void", []string{EnvMem + "=4", EnvVisible + "=void"}, Request{}, false, ""},
		{"empty", []string{EnvMem + "=4", EnvNVVisible + "="}, Request{}, false, ""},
		{"bad device", []string{EnvMem + "=4", EnvVisible + "=0;rm -rf"}, Request{}, false, "want GPU indices or UUIDs"},
		{"empty item", []string{EnvMem + "=4", EnvVisible + "=0,,1"}, Request{}, false, "want GPU indices or UUIDs"},
		{"no equals ignored", []string{"JUNK", EnvMem + "=1"}, Request{Memory: gib2, MemVar: EnvMem + "=1"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := ParseEnv(tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Asked = tt.ok
			if ok != tt.ok || (ok && !reflect.DeepEqual(got, tt.want)) {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestParseEnvTwice: a variable given twice with different values is
// refused, since the runtime, not the spec, decides which one the
// container sees (runc's init: the last; getenv(3) over a raw list: the
// first). The same value twice is one value.
func TestParseEnvTwice(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		err  string // "" accepted
	}{
		{"memory, larger second", []string{EnvMem + "=2", EnvMem + "=16"}, `ALIYUN_COM_GPU_MEM_CONTAINER is set twice with different values ("2" and "16")`},
		{"memory, zero second", []string{EnvMem + "=4", EnvMem + "=0"}, "ALIYUN_COM_GPU_MEM_CONTAINER is set twice"},
		{"memory, same value", []string{EnvMem + "=4", "A=1", EnvMem + "=4"}, ""},
		{"unit", []string{EnvMem + "=4", EnvMemUnit + "=MiB", EnvMemUnit + "=GiB"}, "ALIYUN_COM_GPU_MEM_UNIT is set twice"},
		{"dev", []string{EnvMem + "=4", EnvMemDev + "=15", EnvMemDev + "=80"}, "ALIYUN_COM_GPU_MEM_DEV is set twice"},
		{"visible", []string{EnvMem + "=4", EnvVisible + "=0", EnvVisible + "=none"}, "ALIYUN_COM_GPU_VISIBLE_DEVICES is set twice"},
		{"weight", []string{EnvMem + "=4", EnvWeight + "=1", EnvWeight + "=9"}, "ALIYUN_COM_GPU_SCHD_WEIGHT is set twice"},
		{"disable", []string{EnvMem + "=4", EnvDisable + "=0", EnvDisable + "=1"}, "CGPU_DISABLE is set twice"},
		{"disable, same value", []string{EnvMem + "=4", EnvDisable + "=1", EnvDisable + "=1"}, ""},
		{"cdi", []string{EnvMem + "=4", EnvCDIGPUPrefix + "0=0", EnvCDIGPUPrefix + "0=1"}, "CGPU_CDI_GPU_0 is set twice"},
		{"cgpu's variable without a slice asked", []string{EnvDisable + "=0", EnvDisable + "=1"}, "CGPU_DISABLE is set twice"},
		{"nvidia's, read", []string{EnvMem + "=4", EnvNVVisible + "=0", EnvNVVisible + "=all"}, "NVIDIA_VISIBLE_DEVICES is set twice"},
		{"nvidia's, not read: no slice", []string{EnvNVVisible + "=0", EnvNVVisible + "=all"}, ""},
		{"nvidia's, not read: cgpu's variable names the GPUs", []string{EnvMem + "=4", EnvVisible + "=1", EnvNVVisible + "=0", EnvNVVisible + "=all"}, ""},
		{"another variable", []string{EnvMem + "=4", "PATH=/bin", "PATH=/usr/bin"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseEnv(tt.env)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestParseEnvOptOut: what the hook's env policy needs to know of a
// container that gets no slice: whether it asked for one, and what
// switched it off.
func TestParseEnvOptOut(t *testing.T) {
	tests := []struct {
		name   string
		env    []string
		asked  bool
		optOut string
	}{
		{"nothing", []string{"PATH=/bin"}, false, ""},
		{"disabled", []string{EnvMem + "=4", EnvDisable + "=1"}, true, EnvDisable + "=1"},
		{"disabled, no slice asked", []string{EnvDisable + "=true"}, false, EnvDisable + "=true"},
		{"disabled, memory unreadable", []string{EnvMem + "=lots", EnvDisable + "=1"}, true, EnvDisable + "=1"},
		{"disabled, memory 0", []string{EnvMem + "=0", EnvDisable + "=1"}, false, EnvDisable + "=1"},
		{"aliyun none", []string{EnvMem + "=4", EnvVisible + "=none"}, true, EnvVisible + "=none"},
		{"nvidia void", []string{EnvMem + "=4", EnvNVVisible + "=void"}, true, EnvNVVisible + "=void"},
		{"cdi empty", []string{EnvMem + "=4", EnvCDIGPUPrefix + "0="}, true, EnvCDIGPUPrefix + "*="},
		{"none, no slice asked", []string{EnvVisible + "=none"}, false, EnvVisible + "=none"},
		{"none, memory 0", []string{EnvMem + "=0", EnvVisible + "=none"}, false, EnvVisible + "=none"},
		{"bad list, no slice asked: no error, no opt-out", []string{EnvNVVisible + "=0;x"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, want, err := ParseEnv(tt.env)
			if err != nil || want {
				t.Fatalf("want %v err %v", want, err)
			}
			if req.Asked != tt.asked || req.OptOut != tt.optOut {
				t.Errorf("asked %v, opt-out %q; want %v, %q", req.Asked, req.OptOut, tt.asked, tt.optOut)
			}
		})
	}
}
