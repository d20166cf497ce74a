package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

func TestRetryPolicy(t *testing.T) {
	fast := llm.RetryPolicy{MinBackoff: time.Microsecond, MaxBackoff: time.Millisecond}
	fail := &llm.Error{Provider: "p", Status: 503, Message: "down", Retryable: true}
	for _, tc := range []struct {
		name     string
		retries  int
		failures int // attempts that fail before success
		retry    bool
		after    time.Duration
		attempts int
		ok       bool
	}{
		{"success", 0, 0, true, 0, 1, true},
		{"two failures then success", 0, 2, true, 0, 3, true},
		{"default retries spent", 0, 10, true, 0, 1 + llm.DefaultMaxRetries, false},
		{"no retries", -1, 10, true, 0, 1, false},
		{"five retries", 5, 10, true, 0, 6, false},
		{"not retryable", 3, 10, false, 0, 1, false},
		{"retry-after too long", 3, 10, true, time.Hour, 1, false},
		{"retry-after honoured", 3, 1, true, time.Millisecond, 2, true},
	} {
		p := fast
		p.MaxRetries = tc.retries
		n := 0
		err := p.Do(context.Background(), "p", func(context.Context) (bool, time.Duration, error) {
			n++
			if n <= tc.failures {
				return tc.retry, tc.after, fail
			}
			return false, 0, nil
		})
		if n != tc.attempts || (err == nil) != tc.ok {
			t.Errorf("%s: %d attempts, err %v; want %d attempts, ok %v", tc.name, n, err, tc.attempts, tc.ok)
		}
		if err != nil && !errors.Is(err, error(fail)) {
			t.Errorf("%s: err = %v, want the attempt's error", tc.name, err)
		}
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := llm.RetryPolicy{MinBackoff: time.Hour, MaxBackoff: time.Hour}
	err := p.Do(ctx, "p", func(context.Context) (bool, time.Duration, error) {
		cancel()
		return true, 0, &llm.Error{Provider: "p", Status: 500, Retryable: true}
	})
	var e *llm.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Retryable {
		t.Errorf("err = %v, want a non-retryable *llm.Error matching context.Canceled", err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After-Ms": {"150"}, "Retry-After": {"1"}}, 150 * time.Millisecond},
		{http.Header{"Retry-After": {"0"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{nil, 0},
	} {
		if got := llm.RetryAfter(tc.h); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestShortenRedacts(t *testing.T) {
	long := "bad key sk-123\n\n " + strings.Repeat("é", 500)
	got := llm.Shorten(long, "sk-123")
	if len(got) > 310 || !strings.HasPrefix(got, "bad key [redacted] éé") || !strings.HasSuffix(got, "é…") {
		t.Errorf("Shorten = %q (%d bytes)", got, len(got))
	}
	for _, m := range []string{"prompt is too long: 210000 tokens > 200000 maximum",
		"This model's maximum context length is 8192 tokens",
		"the request exceeds the available context size, try increasing it"} {
		if !llm.IsContextWindowMessage(m) {
			t.Errorf("IsContextWindowMessage(%q) = false", m)
		}
	}
	if llm.IsContextWindowMessage("Rate limit reached for requests") {
		t.Errorf("a rate limit reads as a context-window error")
	}
}
