// Package sse writes Server-Sent Events (text/event-stream) responses.
package sse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HeartbeatInterval is how often long-lived streams send a comment so
// proxies and clients can tell an idle stream from a dead one.
const HeartbeatInterval = 15 * time.Second

// WriteTimeout bounds each write: a client that stops reading is dropped
// instead of holding its handler forever.
const WriteTimeout = 30 * time.Second

// Writer writes events to one response. It is not safe for concurrent use.
type Writer struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// Start sends the event-stream headers and a 200, flushed at once so the
// client knows the stream is open.
func Start(w http.ResponseWriter) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &Writer{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// Event writes one event and flushes.
func (s *Writer) Event(id, event string, data any) error {
	if err := s.Queue(id, event, data); err != nil {
		return err
	}
	return s.Flush()
}

// Queue writes one event without flushing, so several can go out in one
// Flush: an optional id, the event name, and data as one line of JSON.
func (s *Writer) Queue(id, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("sse: encode %s: %w", event, err)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(event) + len(id) + 24)
	if id != "" {
		sb.WriteString("id: ")
		sb.WriteString(id)
		sb.WriteByte('\n')
	}
	sb.WriteString("event: ")
	sb.WriteString(event)
	sb.WriteString("\ndata: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	return s.write(sb.String())
}

// Comment writes a comment line (a heartbeat) and flushes.
func (s *Writer) Comment(text string) error {
	if err := s.write(": " + text + "\n\n"); err != nil {
		return err
	}
	return s.Flush()
}

// Flush sends what was queued.
func (s *Writer) Flush() error { return s.rc.Flush() }

func (s *Writer) write(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := s.w.Write([]byte(text))
	return err
}
