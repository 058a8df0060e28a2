package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
)

// Bounds past which a value is absurd whatever the GPUs are; the Manager
// checks the real ones (a GPU's memory, the instance cap, max weight).
// Names and memory follow v1's rules, the ones cgpu.ko checks.
const (
	maxWeight      = 1 << 10
	maxGPUs        = 64
	maxContainerID = 256
	maxCgroup      = 4096
	maxGPURef      = 96 // a UUID is 40
)

// decodeJSON reads exactly one JSON value of type T, no unknown fields, at
// most MaxBody bytes.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return &apiError{http.StatusUnsupportedMediaType, codeMediaType,
				fmt.Sprintf("Content-Type %q: the body must be application/json", ct)}
		}
	}
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			return badRequest("body: more than one JSON value")
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return bodyError(err)
		}
		return badRequest("body: trailing data after the JSON value")
	}
	return nil
}

func bodyError(err error) error {
	var (
		mbe  *http.MaxBytesError
		syn  *json.SyntaxError
		typ  *json.UnmarshalTypeError
		kind = ""
	)
	switch {
	case errors.As(err, &mbe):
		return &apiError{http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("body: larger than %d bytes", mbe.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("body: empty, a JSON object is expected")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body: truncated JSON")
	case errors.As(err, &syn):
		return badRequest(fmt.Sprintf("body: malformed JSON at byte %d: %v", syn.Offset, syn))
	case errors.As(err, &typ):
		if typ.Field != "" {
			kind = " in field " + strconv.Quote(typ.Field)
		}
		return badRequest(fmt.Sprintf("body: %s is not a valid %s%s", typ.Value, typ.Type, kind))
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return badRequest("body: unknown field " + f)
	}
	return badRequest("body: " + err.Error())
}

func validName(name string) error {
	if err := v1.ValidName(name); err != nil {
		return badRequest(err.Error())
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

func validMemory(m uint64) error {
	if err := v1.ValidMemory(m); err != nil {
		return badRequest(err.Error())
	}
	return nil
}

func validWeight(w uint32, zeroOK bool) error {
	if w == 0 && !zeroOK {
		return badRequest("weight: 0; weights start at 1")
	}
	if w > maxWeight {
		return badRequest(fmt.Sprintf("weight: %d is absurd (at most the GPU's instance cap)", w))
	}
	return nil
}

func validateCreate(req *v1.CreateRequest) error {
	if req.Name != "" {
		if err := validName(req.Name); err != nil {
			return err
		}
	}
	switch {
	case req.ContainerID == "":
		return badRequest("container_id: missing")
	case len(req.ContainerID) > maxContainerID:
		return badRequest(fmt.Sprintf("container_id: %d bytes, at most %d", len(req.ContainerID), maxContainerID))
	case !printable(req.ContainerID) || strings.ContainsAny(req.ContainerID, "/ "):
		return badRequest(fmt.Sprintf("container_id %q: printable characters only, no '/' or space", req.ContainerID))
	}
	switch {
	case req.Cgroup == "":
		return badRequest("cgroup: missing")
	case len(req.Cgroup) > maxCgroup:
		return badRequest(fmt.Sprintf("cgroup: %d bytes, at most %d", len(req.Cgroup), maxCgroup))
	case !strings.HasPrefix(req.Cgroup, "/"):
		return badRequest(fmt.Sprintf("cgroup %q: must be absolute (/sys/fs/cgroup/... or /kubepods/...)", req.Cgroup))
	case !printable(req.Cgroup):
		return badRequest(fmt.Sprintf("cgroup %q: printable characters only", req.Cgroup))
	}
	for _, seg := range strings.Split(req.Cgroup, "/") {
		if seg == ".." {
			return badRequest(fmt.Sprintf("cgroup %q: no .. components", req.Cgroup))
		}
	}
	if len(req.GPUs) > maxGPUs {
		return badRequest(fmt.Sprintf("gpus: %d entries, at most %d", len(req.GPUs), maxGPUs))
	}
	seen := make(map[string]bool, len(req.GPUs))
	for _, g := range req.GPUs {
		if g == "" || len(g) > maxGPURef || !printable(g) {
			return badRequest(fmt.Sprintf("gpus: %q is neither an index nor a UUID", g))
		}
		if seen[g] {
			return badRequest(fmt.Sprintf("gpus: %q twice", g))
		}
		seen[g] = true
	}
	if err := validMemory(req.Memory); err != nil {
		return err
	}
	if err := validWeight(req.Weight, true); err != nil {
		return err
	}
	switch req.Placement {
	case "", v1.PlacementBinpack, v1.PlacementSpread:
	default:
		return badRequest(fmt.Sprintf("placement %q: binpack or spread", req.Placement))
	}
	return nil
}

func validateResize(req *v1.ResizeRequest) error {
	if req.Memory == nil && req.Weight == nil {
		return badRequest("nothing to change: give memory, weight or both")
	}
	if req.Memory != nil {
		if err := validMemory(*req.Memory); err != nil {
			return err
		}
	}
	if req.Weight != nil {
		if err := validWeight(*req.Weight, false); err != nil {
			return err
		}
	}
	return nil
}

// queryParams checks that q holds only the allowed keys, each once.
func queryParams(q url.Values, allowed ...string) error {
	for k, vs := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return badRequest(fmt.Sprintf("query parameter %q: unknown", k))
		}
		if len(vs) > 1 {
			return badRequest(fmt.Sprintf("query parameter %q: given %d times", k, len(vs)))
		}
	}
	return nil
}
