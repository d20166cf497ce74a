package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy is how a provider retries a failed attempt: 429, 5xx,
// timeouts and connection errors are retried with exponential backoff
// (or after the server's Retry-After, when it sends one); anything else
// fails at once. The zero value is the default policy.
type RetryPolicy struct {
	// MaxRetries is the number of attempts after the first: 0 means the
	// default (3), a negative number means no retry.
	MaxRetries int
	// Timeout bounds one attempt, streaming included; 0 means none (the
	// caller's context still applies).
	Timeout time.Duration
	// MinBackoff is the wait before the first retry (default 500ms); it
	// doubles with each retry up to MaxBackoff (default 8s), with jitter.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest server-asked wait (Retry-After) the
	// policy accepts (default 60s); a longer one ends the retries.
	MaxRetryAfter time.Duration
}

// DefaultMaxRetries is RetryPolicy's retry count when MaxRetries is 0.
const DefaultMaxRetries = 3

func (p RetryPolicy) retries() int {
	switch {
	case p.MaxRetries < 0:
		return 0
	case p.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return p.MaxRetries
}

func (p RetryPolicy) backoff(retry int) time.Duration {
	lo, hi := p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi <= 0 {
		hi = 8 * time.Second
	}
	d := lo << min(retry, 20)
	if d <= 0 || d > hi {
		d = hi
	}
	if j := int64(d / 4); j > 0 {
		d -= time.Duration(rand.Int64N(j))
	}
	return d
}

// Attempt is one try of a completion. It returns the error of the try
// (an *Error), whether trying again may help, and the least wait the
// server asked for (0 if none).
type Attempt func(ctx context.Context) (retry bool, after time.Duration, err error)

// Do runs attempt until it succeeds, fails for good or the retries are
// spent, and returns the last error. Each attempt gets its own context
// bounded by Timeout; a deadline hit there is reported by attempt like
// any other failure. When ctx ends, Do stops at once and returns an
// *Error for provider wrapping ctx.Err().
func (p RetryPolicy) Do(ctx context.Context, provider string, attempt Attempt) error {
	for n := 0; ; n++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if p.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, p.Timeout)
		}
		retry, after, err := attempt(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return Canceled(provider, ctx)
		}
		if !retry || n >= p.retries() {
			return err
		}
		wait := p.backoff(n)
		if after > 0 {
			if after > p.maxRetryAfter() {
				return err
			}
			wait = after
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Canceled(provider, ctx)
		case <-t.C:
		}
	}
}

func (p RetryPolicy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter > 0 {
		return p.MaxRetryAfter
	}
	return 60 * time.Second
}

// Canceled is the error of a completion whose context ended: it matches
// errors.Is(err, context.Canceled) (or DeadlineExceeded).
func Canceled(provider string, ctx context.Context) *Error {
	return &Error{Provider: provider, Message: ctx.Err().Error(), Err: ctx.Err()}
}

// RetryAfter reads a response's Retry-After-Ms or Retry-After header
// (seconds or an HTTP date); 0 if there is none.
func RetryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// RetryableStatus reports whether an HTTP status is worth another try:
// 408, 409 (a lock conflict at the provider), 429 and 5xx.
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// IsContextWindowMessage reports whether a provider's error message says
// the request is over the model's context window. It knows the wording
// of OpenAI, Anthropic, vLLM, llama.cpp, Ollama and OpenRouter.
func IsContextWindowMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{
		"context_length_exceeded", "context length", "context window",
		"maximum context", "context size", "prompt is too long",
		"too many tokens", "input is too long", "reduce the length",
	} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// Shorten cuts a provider message to a readable length and removes
// secret (a key) wherever it appears.
func Shorten(msg, secret string) string {
	if secret != "" {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	const limit = 300
	if len(msg) > limit {
		cut := limit
		for cut > 0 && !isRuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ContextWindowError returns the *Error of a request over the model's
// window: errors.Is(err, ErrContextWindow) holds.
func ContextWindowError(provider string, status int, msg string) *Error {
	return &Error{Provider: provider, Status: status, Message: msg, Err: ErrContextWindow}
}
