package contract

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The annotations by which an orchestrator (cgpu's Kubernetes device
// plugin or DRA driver, to come) hands a container its slice. They are OCI
// annotations of the bundle's config.json, which the runtime writes from
// the CRI request (a device plugin's Allocate answer, or the kubelet), so
// the workload's own environment cannot set them. They are worth only as
// much as that holds: the runtime must not copy annotations a pod's author
// chooses into the container under this prefix (containerd copies a pod's
// annotations into its containers only for keys its pod_annotations and
// container_annotations lists match; with another runtime, check before
// relying on them). The hook reads them only where the node's env_policy
// is "untrusted" (EnvUntrusted).
const (
	AnnotationPrefix = "cgpu.io/"
	// AnnotationMemory is the slice on each GPU in bytes (decimal); it
	// must be there for an assignment.
	AnnotationMemory = AnnotationPrefix + "memory"
	// AnnotationGPUs names the GPUs as ALIYUN_COM_GPU_VISIBLE_DEVICES does
	// (indices or UUIDs, comma-separated, or all); absent, cgpud's
	// placement picks one.
	AnnotationGPUs = AnnotationPrefix + "gpus"
	// AnnotationWeight is the compute weight, 1 or more; absent, cgpud's
	// default.
	AnnotationWeight = AnnotationPrefix + "weight"
)

// Assigned is true when the annotations hold any key under
// AnnotationPrefix: an orchestrator meant to assign a slice.
func Assigned(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			return true
		}
	}
	return false
}

// ParseAssignment reads an orchestrator's assignment from a container's
// annotations. ok is false when there is none (no key under
// AnnotationPrefix). A key under the prefix that cgpu does not know, a
// missing or unreadable memory, or GPUs "none" are errors: an assignment
// cgpu cannot read whole is not half applied.
func ParseAssignment(annotations map[string]string) (req Request, ok bool, err error) {
	if !Assigned(annotations) {
		return req, false, nil
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case !strings.HasPrefix(k, AnnotationPrefix):
		case k == AnnotationMemory, k == AnnotationGPUs, k == AnnotationWeight:
		default:
			return req, true, fmt.Errorf("annotation %s: unknown; cgpu reads %s, %s and %s", k, AnnotationMemory, AnnotationGPUs, AnnotationWeight)
		}
	}
	raw, set := annotations[AnnotationMemory]
	if !set {
		return req, true, fmt.Errorf("the container has cgpu.io annotations but no %s: an assignment names its slice", AnnotationMemory)
	}
	n, perr := strconv.ParseUint(raw, 10, 64)
	if perr != nil || n == 0 {
		return req, true, fmt.Errorf("annotation %s=%q: want a whole number of bytes, at least 1", AnnotationMemory, raw)
	}
	req.Memory, req.MemVar, req.Asked = n, AnnotationMemory+"="+raw, true
	if s, set := annotations[AnnotationGPUs]; set {
		devs, err := parseDevices(AnnotationGPUs, s)
		switch {
		case err != nil:
			return req, true, err
		case len(devs) == 0:
			return req, true, fmt.Errorf("annotation %s=%q: an assignment names GPUs, all, or leaves the annotation out", AnnotationGPUs, s)
		case len(devs) == 1 && devs[0] == "all":
			req.AllGPUs = true
		default:
			req.GPUs = devs
		}
	}
	if s, set := annotations[AnnotationWeight]; set {
		w, err := strconv.ParseUint(s, 10, 32)
		if err != nil || w == 0 {
			return req, true, fmt.Errorf("annotation %s=%q: want an integer of at least 1", AnnotationWeight, s)
		}
		req.Weight = uint32(w)
	}
	return req, true, nil
}
