package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// ErrAuth matches errors caused by the token: rejected (401) or without
// the permission the call needs (403).
var ErrAuth = errors.New("forge: token rejected or lacking permission")

// Error is a failed forge call.
type Error struct {
	// Status is the forge's HTTP status, 0 when it was not reached.
	Status int
	// Retryable is true for failures that may pass on a later attempt:
	// the network, a 5xx, a rate limit.
	Retryable bool
	class     error // an errdefs class
	auth      bool
	msg       string // client-safe, token-free
	cause     error  // never an error that holds the request (its headers carry the token)
}

func (e *Error) Error() string { return e.msg }

// Is matches the errdefs class, and ErrAuth for token failures.
func (e *Error) Is(target error) bool {
	return target == e.class || (target == ErrAuth && e.auth)
}

// Unwrap returns the cause: a network or context error, if any.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether err is a forge failure worth retrying.
func Retryable(err error) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Retryable
}

// api is a forge's API as its errors describe it. Each provider turns its
// client library's errors into statusError, rateLimited or transportError,
// so that every forge fails alike.
type api struct {
	name string // "GitHub", "GitLab at gitlab.example.com"
	repo string // what the forge calls a repository: "repository", "project"
	pr   string // and a pull request: "pull request", "merge request"
	perm string // what a token needs, said on a 403
}

// statusError is the *Error for an answer with an error status; detail is
// the forge's message ("" for none).
func (a api) statusError(op string, status int, detail, token string) *Error {
	e := &Error{Status: status}
	e.auth, e.Retryable, e.class = classOf(status)
	// GitLab's messages start with the status: "401 Unauthorized".
	detail = strings.TrimPrefix(strings.TrimSpace(detail), strconv.Itoa(status)+" ")
	if detail == "" {
		detail = http.StatusText(status)
	}
	e.msg = fmt.Sprintf("%s: %s: %d %s", a.name, op, status, clip(detail))
	switch status {
	case http.StatusUnauthorized:
		e.msg += " (the token is wrong, expired or revoked)"
	case http.StatusForbidden:
		e.msg += " (the token lacks permission: it needs " + a.perm + ")"
	case http.StatusNotFound:
		e.msg += " (no such " + a.repo + ", or the token cannot see it)"
	}
	e.msg = redact(e.msg, token)
	return e
}

// rateLimited is the *Error for a rate limit the forge reported, whatever
// the status it used.
func (a api) rateLimited(op string, status int, detail, token string) *Error {
	return &Error{Status: status, Retryable: true, class: errdefs.ErrRateLimited,
		msg: redact(fmt.Sprintf("%s: %s: %s", a.name, op, clip(detail)), token)}
}

// transportError is the *Error for a call that got no usable answer: the
// context ended, the network failed, or the answer could not be read. Only
// the innermost error is kept as the cause: a *url.Error names the URL, and
// client libraries' errors may hold the request.
func (a api) transportError(op string, err error, token string) *Error {
	e := &Error{}
	var ue *url.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.class, e.cause = errdefs.ErrTimeout, ctxErr(err)
		e.msg = fmt.Sprintf("%s: %s: %v", a.name, op, e.cause)
	case errors.As(err, &ue):
		e.class, e.Retryable, e.cause = errdefs.ErrUnavailable, true, ue.Err
		e.msg = fmt.Sprintf("%s: %s: cannot reach the API: %v", a.name, op, ue.Err)
	default:
		e.class, e.Retryable = errdefs.ErrUnavailable, true
		e.msg = fmt.Sprintf("%s: %s: %v", a.name, op, err)
	}
	e.msg = redact(e.msg, token)
	return e
}

// noDefaultBranch is the error for a repository without a default branch
// (an empty one) when no base was given.
func (a api) noDefaultBranch(name string) error {
	return &Error{class: errdefs.ErrUnprocessable,
		msg: fmt.Sprintf("%s: %s %s has no default branch; give a base branch", a.name, a.repo, name)}
}

// caller is what a session reports its failures with: its forge's API,
// and the call's token, which they must not show.
type caller struct {
	api
	token string
}

// ctxErr is the context error within err.
func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return context.Canceled
	}
	return context.DeadlineExceeded
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

// classOf maps a forge's status to whether it is the token's fault,
// whether trying again may help, and an errdefs class.
func classOf(status int) (auth, retry bool, class error) {
	switch {
	case status == http.StatusUnauthorized:
		return true, false, errdefs.ErrUnauthorized
	case status == http.StatusForbidden:
		return true, false, errdefs.ErrForbidden
	case status == http.StatusNotFound:
		return false, false, errdefs.ErrNotFound
	case status == http.StatusConflict:
		return false, false, errdefs.ErrConflict
	case status == http.StatusTooManyRequests:
		return false, true, errdefs.ErrRateLimited
	case status >= 500:
		return false, true, errdefs.ErrUnavailable
	case status == http.StatusBadRequest:
		return false, false, errdefs.ErrInvalid
	}
	return false, false, errdefs.ErrUnprocessable // 422 and the rest
}

// clip cuts a forge's message to a length fit for an error.
func clip(msg string) string {
	if len(msg) > 1024 {
		return strings.ToValidUTF8(msg[:1024], "") + "..."
	}
	return msg
}

// redact removes token from s.
func redact(s, token string) string {
	if len(token) < 4 { // shorter strings would mangle messages; no real token is
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}
