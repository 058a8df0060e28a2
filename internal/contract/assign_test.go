package contract

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseAssignment(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want Request
		ok   bool
		err  string
	}{
		{"none", nil, Request{}, false, ""},
		{"other annotations", map[string]string{"io.kubernetes.cri.container-type": "container"}, Request{}, false, ""},
		{"memory", map[string]string{AnnotationMemory: "4294967296"}, Request{Memory: 4 * gib2, MemVar: AnnotationMemory + "=4294967296", Asked: true}, true, ""},
		{"gpus and weight", map[string]string{AnnotationMemory: "1073741824", AnnotationGPUs: "1,GPU-ab", AnnotationWeight: "2"},
			Request{Memory: gib2, GPUs: []string{"1", "GPU-ab"}, Weight: 2, MemVar: AnnotationMemory + "=1073741824", Asked: true}, true, ""},
		{"all", map[string]string{AnnotationMemory: "1073741824", AnnotationGPUs: "all"}, Request{Memory: gib2, AllGPUs: true, MemVar: AnnotationMemory + "=1073741824", Asked: true}, true, ""},
		{"no memory", map[string]string{AnnotationGPUs: "0"}, Request{}, true, "but no cgpu.io/memory"},
		{"memory 0", map[string]string{AnnotationMemory: "0"}, Request{}, true, "at least 1"},
		{"memory with a unit", map[string]string{AnnotationMemory: "4GiB"}, Request{}, true, "whole number of bytes"},
		{"gpus none", map[string]string{AnnotationMemory: "1", AnnotationGPUs: "none"}, Request{}, true, "names GPUs"},
		{"gpus bad", map[string]string{AnnotationMemory: "1", AnnotationGPUs: "0;1"}, Request{}, true, "want GPU indices"},
		{"weight 0", map[string]string{AnnotationMemory: "1", AnnotationWeight: "0"}, Request{}, true, "at least 1"},
		{"unknown key", map[string]string{AnnotationMemory: "1", "cgpu.io/disable": "true"}, Request{}, true, "annotation cgpu.io/disable: unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := ParseAssignment(tt.ann)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseEnvPolicy(t *testing.T) {
	for s, want := range map[string]EnvPolicy{"trusted": EnvTrusted, "untrusted": EnvUntrusted} {
		if p, err := ParseEnvPolicy(s); err != nil || p != want {
			t.Errorf("%q: %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "Trusted", "orchestrated", "strict"} {
		if _, err := ParseEnvPolicy(s); err == nil || !strings.Contains(err.Error(), `env_policy = `) {
			t.Errorf("%q: err %v", s, err)
		}
	}
}
