package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	v1 "github.com/cgpu-dev/cgpu/daemon/api/v1"
	"github.com/cgpu-dev/cgpu/daemon/internal/instance"
)

// Error codes: v1's, the fixed list of v1.Error. A wrong method (405) and a
// wrong Content-Type (415) are bad requests; the status tells them apart.
const (
	codeBadRequest  = v1.CodeBadRequest
	codeNotFound    = v1.CodeNotFound
	codeConflict    = v1.CodeConflict
	codeNoSpace     = v1.CodeNoSpace
	codeBusy        = v1.CodeBusy
	codeForbidden   = v1.CodeForbidden
	codeTooLarge    = v1.CodeTooLarge
	codeUnavailable = v1.CodeUnavailable
	codeInternal    = v1.CodeInternal
	codeMethod      = v1.CodeBadRequest
	codeMediaType   = v1.CodeBadRequest
)

// apiError is a failure with its status, made by the handlers themselves.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(msg string) error { return &apiError{http.StatusBadRequest, codeBadRequest, msg} }

// classify maps an error to its status and code: the handlers' own, then
// internal/instance's sentinels, else 500.
func classify(err error) (int, string) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.code
	case errors.Is(err, instance.ErrInvalid):
		return http.StatusBadRequest, codeBadRequest
	case errors.Is(err, instance.ErrNotFound):
		return http.StatusNotFound, codeNotFound
	case errors.Is(err, instance.ErrConflict):
		return http.StatusConflict, codeConflict
	case errors.Is(err, instance.ErrNoSpace):
		return http.StatusConflict, codeNoSpace
	case errors.Is(err, instance.ErrBusy):
		return http.StatusConflict, codeBusy
	case errors.Is(err, instance.ErrUnavailable):
		return http.StatusServiceUnavailable, codeUnavailable
	default:
		return http.StatusInternalServerError, codeInternal
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the peer hung up; nothing left to tell it
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, v1.Error{Code: code, Message: msg})
}

// writeErr answers err; a failed create always starts with ACK's prefix so
// a hook can print the message as it is.
func writeErr(w http.ResponseWriter, err error, create bool) {
	status, code := classify(err)
	msg := err.Error()
	if create && !strings.HasPrefix(msg, v1.ErrorPrefixCreate) {
		msg = v1.ErrorPrefixCreate + msg
	}
	writeError(w, status, code, msg)
}
