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
		{"first wins", []string{EnvMem + "=2", EnvMem + "=9"}, Request{Memory: 2 * gib2, MemVar: EnvMem + "=2"}, true, ""},
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
			if ok != tt.ok || (ok && !reflect.DeepEqual(got, tt.want)) {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
