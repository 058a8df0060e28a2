package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
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
// most MaxBody bytes. Keys must match the fields' tags exactly and appear
// once (strictKeys): encoding/json would take "Memory" for "memory" and
// keep the last of two "memory" keys, so two readers of one body (a proxy
// that checks it, the daemon that acts on it) could see different requests.
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
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return bodyError(err)
	}
	if err := strictKeys(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	vdec := json.NewDecoder(bytes.NewReader(raw))
	vdec.DisallowUnknownFields()
	if err := vdec.Decode(v); err != nil {
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

// strictKeys walks one JSON value (already known to be well-formed) along
// the Go type it is decoded into, and refuses a key given twice in one
// object and a key that matches a struct field only when case is ignored.
// A token walk and not encoding/json/v2, which refuses both by default:
// in Go 1.26 v2 still needs GOEXPERIMENT=jsonv2 at build time. A key no
// field matches at all is left to DisallowUnknownFields.
func strictKeys(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return walkKeys(dec, t, "")
}

func walkKeys(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return badRequest("body: " + err.Error())
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return badRequest("body: " + err.Error())
			}
			key, _ := kt.(string)
			where := path + key
			if seen[key] {
				return badRequest(fmt.Sprintf("body: key %q given twice", where))
			}
			seen[key] = true
			vt := elem
			if fields != nil {
				var ok bool
				if vt, ok = fields[key]; !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return badRequest(fmt.Sprintf("body: key %q: keys are case-sensitive, the field is %q", where, path+name))
						}
					}
				}
			}
			if err := walkKeys(dec, vt, where+"."); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return badRequest("body: " + err.Error())
		}
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkKeys(dec, elem, fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return badRequest("body: " + err.Error())
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's fields, as encoding/json
// names them, to the fields' types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				m[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
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
