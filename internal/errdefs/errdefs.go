// Package errdefs defines the classes of error Corral's packages return.
//
// Domain code wraps one of these sentinels with %w and a message that is safe
// to show a client; exactly one function per transport (problem.Write for
// HTTP) turns the class into a status code. Nothing else chooses status codes.
package errdefs

import (
	"errors"
	"fmt"
)

// The error classes. Check them with errors.Is.
var (
	ErrInvalid       = errors.New("invalid argument")   // malformed input: 400
	ErrUnauthorized  = errors.New("unauthorized")       // missing or wrong credentials: 401
	ErrForbidden     = errors.New("forbidden")          // e.g. a path escaping the root: 403
	ErrNotFound      = errors.New("not found")          // 404
	ErrMethod        = errors.New("method not allowed") // 405
	ErrConflict      = errors.New("conflict")           // state conflict: 409
	ErrTooLarge      = errors.New("too large")          // body or result over a limit: 413
	ErrUnprocessable = errors.New("unprocessable")      // valid but impossible, e.g. no such executable: 422
	ErrRateLimited   = errors.New("rate limited")       // 429
	ErrBadGateway    = errors.New("bad gateway")        // an upstream we proxy to failed: 502
	ErrUnavailable   = errors.New("unavailable")        // dependency down or shutting down: 503
	ErrTimeout       = errors.New("timed out")          // 504
)

// Error is an error of a class with a message meant for the client.
// Its Error() is the message; errors.Is matches the class.
type Error struct {
	Class error
	Msg   string
	Err   error // optional cause, logged but never sent
}

func (e *Error) Error() string { return e.Msg }

// Is reports whether target is the class of e.
func (e *Error) Is(target error) bool { return target == e.Class }

// Unwrap returns the cause, so errors.Is/As can see through e to it.
func (e *Error) Unwrap() error { return e.Err }

func newf(class error, cause error, format string, args []any) error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Class: class, Msg: msg, Err: cause}
}

// Invalidf returns an ErrInvalid error with a client-safe message.
func Invalidf(format string, args ...any) error { return newf(ErrInvalid, nil, format, args) }

// NotFoundf returns an ErrNotFound error with a client-safe message.
func NotFoundf(format string, args ...any) error { return newf(ErrNotFound, nil, format, args) }

// Conflictf returns an ErrConflict error with a client-safe message.
func Conflictf(format string, args ...any) error { return newf(ErrConflict, nil, format, args) }

// Forbiddenf returns an ErrForbidden error with a client-safe message.
func Forbiddenf(format string, args ...any) error { return newf(ErrForbidden, nil, format, args) }

// TooLargef returns an ErrTooLarge error with a client-safe message.
func TooLargef(format string, args ...any) error { return newf(ErrTooLarge, nil, format, args) }

// Unprocessablef returns an ErrUnprocessable error with a client-safe message.
func Unprocessablef(format string, args ...any) error {
	return newf(ErrUnprocessable, nil, format, args)
}

// Unavailablef returns an ErrUnavailable error with a client-safe message.
func Unavailablef(format string, args ...any) error { return newf(ErrUnavailable, nil, format, args) }

// Unauthorizedf returns an ErrUnauthorized error with a client-safe message.
func Unauthorizedf(format string, args ...any) error {
	return newf(ErrUnauthorized, nil, format, args)
}

// Wrap returns an error of class with a client-safe message and a cause that
// is only logged.
func Wrap(class, cause error, msg string) error { return &Error{Class: class, Msg: msg, Err: cause} }
