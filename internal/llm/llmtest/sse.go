package llmtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// chunks splits s into n pieces (at rune boundaries), n defaulting to 3.
func chunks(s string, n int) []string {
	if n <= 0 {
		n = 3
	}
	r := []rune(s)
	if n > len(r) {
		n = len(r)
	}
	if n <= 1 {
		return []string{s}
	}
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

// sse writes server-sent events, flushing each.
type sse struct {
	w   http.ResponseWriter
	ctx context.Context
}

func startSSE(ctx context.Context, w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, ctx: ctx}
}

// send writes one event; name "" writes a data-only event. data is
// marshalled unless it is a string.
func (e *sse) send(name string, data any) error {
	if err := e.ctx.Err(); err != nil {
		return err
	}
	var b []byte
	switch d := data.(type) {
	case string:
		b = []byte(d)
	default:
		var err error
		if b, err = json.Marshal(d); err != nil {
			return err
		}
	}
	var sb strings.Builder
	if name != "" {
		sb.WriteString("event: " + name + "\n")
	}
	sb.WriteString("data: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	if _, err := io.WriteString(e.w, sb.String()); err != nil {
		return err
	}
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// stall waits d in the middle of a stream; false if the client left.
func (e *sse) stall(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.ctx.Done():
		return false
	}
}
