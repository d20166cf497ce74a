package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// The classes of error the daemon reports, one per status code. An
// *APIError matches the one for its status with errors.Is.
var (
	ErrInvalid       = errors.New("invalid request")         // 400
	ErrUnauthorized  = errors.New("unauthorized")            // 401
	ErrForbidden     = errors.New("forbidden")               // 403, e.g. a path escaping the root
	ErrNotFound      = errors.New("not found")               // 404
	ErrConflict      = errors.New("conflict")                // 409, e.g. a tag taken or a process already exited
	ErrTooLarge      = errors.New("too large")               // 413
	ErrUnprocessable = errors.New("unprocessable")           // 422, e.g. no such executable
	ErrRateLimited   = errors.New("rate limited")            // 429: retry after the Retry-After header
	ErrBadGateway    = errors.New("bad gateway")             // 502: the sandbox (or an app in it) did not answer
	ErrUnavailable   = errors.New("unavailable")             // 503
	ErrTimeout       = errors.New("timed out")               // 504
	ErrServer        = errors.New("internal server failure") // any other 5xx
)

var classes = map[int]error{
	http.StatusBadRequest:            ErrInvalid,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusUnprocessableEntity:   ErrUnprocessable,
	http.StatusTooManyRequests:       ErrRateLimited,
	http.StatusBadGateway:            ErrBadGateway,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusGatewayTimeout:        ErrTimeout,
}

// APIError is an error answer from the daemon or the control plane: its
// status and the problem+json (RFC 9457) body.
type APIError struct {
	Status int
	Type   string
	Title  string
	Detail string
	// Method and Path name the request that failed.
	Method, Path string
	origin       string // the server that answered; "sandboxd" when ""
}

func (e *APIError) Error() string {
	origin := e.origin
	if origin == "" {
		origin = originSandboxd
	}
	msg := fmt.Sprintf("%s: %s %s: %d %s", origin, e.Method, e.Path, e.Status, e.Title)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Is reports whether target is the error class of e's status.
func (e *APIError) Is(target error) bool {
	if class, ok := classes[e.Status]; ok && target == class {
		return true
	}
	return target == ErrServer && e.Status >= 500 // every 5xx is also a server failure
}

// parseError reads an error answer. Bodies that are not problem+json still
// give a useful APIError: the status text as title, the start of the body
// as detail.
func parseError(origin, method, path string, resp *http.Response) error {
	e := &APIError{Status: resp.StatusCode, Method: method, Path: path, origin: origin}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		var p struct {
			Type   string `json:"type"`
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(body, &p) == nil {
			e.Type, e.Title, e.Detail = p.Type, p.Title, p.Detail
		}
	} else if s := strings.TrimSpace(string(body)); s != "" {
		if len(s) > 512 {
			s = s[:512] + "..."
		}
		e.Detail = s
	}
	if e.Title == "" {
		e.Title = http.StatusText(resp.StatusCode)
	}
	return e
}

// retryable reports whether a failed dial may succeed later: the daemon
// was unreachable or briefly unavailable, as opposed to refusing the
// request (the process is gone, the token is wrong, ...).
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests
	}
	return true
}
