// Package problem writes errors as RFC 9457 application/problem+json.
//
// It is the only place where an error class from errdefs becomes an HTTP
// status. The client sees the error's client-safe message; the full chain,
// including causes, goes to the log.
package problem

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/corral-sh/corral/internal/errdefs"
)

// ContentType is the media type of every error body.
const ContentType = "application/problem+json"

// Details is the problem+json body.
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

var statuses = []struct {
	class  error
	status int
}{
	{errdefs.ErrInvalid, http.StatusBadRequest},
	{errdefs.ErrUnauthorized, http.StatusUnauthorized},
	{errdefs.ErrForbidden, http.StatusForbidden},
	{errdefs.ErrNotFound, http.StatusNotFound},
	{errdefs.ErrMethod, http.StatusMethodNotAllowed},
	{errdefs.ErrConflict, http.StatusConflict},
	{errdefs.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{errdefs.ErrUnprocessable, http.StatusUnprocessableEntity},
	{errdefs.ErrRateLimited, http.StatusTooManyRequests},
	{errdefs.ErrBadGateway, http.StatusBadGateway},
	{errdefs.ErrUnavailable, http.StatusServiceUnavailable},
	{errdefs.ErrTimeout, http.StatusGatewayTimeout},
}

// Status returns the HTTP status for err's class, 500 when it has none.
func Status(err error) int {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge
	}
	for _, s := range statuses {
		if errors.Is(err, s.class) {
			return s.status
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// From builds the body for err. Only errdefs messages reach Detail; any
// other error is described by its status alone.
func From(err error) Details {
	status := Status(err)
	d := Details{Type: "about:blank", Title: http.StatusText(status), Status: status}
	var e *errdefs.Error
	switch {
	case errors.As(err, &e):
		d.Detail = e.Msg
	case status == http.StatusRequestEntityTooLarge:
		d.Detail = "request body too large"
	}
	return d
}

// Write writes err as problem+json and logs it: client errors at debug
// level, server errors at error level with the whole chain.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	d := From(err)
	level := slog.LevelDebug
	if d.Status >= 500 {
		level = slog.LevelError
	}
	slog.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "status", d.Status, "err", err)
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(d.Status)
	_ = json.NewEncoder(w).Encode(d)
}

// HandlerFunc is an http.Handler that returns its error instead of writing
// it; ServeHTTP writes a non-nil error with Write. A handler that has already
// started its response must not return an error.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

func (f HandlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		Write(w, r, err)
	}
}
