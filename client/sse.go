package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// maxEventBytes caps one server-sent event, so a broken stream cannot make
// the reader buffer without end.
const maxEventBytes = 32 << 20

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	ID    string // the last event id, as the spec carries it forward
	Event string // "message" when the stream names none
	Data  []byte
}

// sseReader parses text/event-stream (the WHATWG EventSource format):
// "field: value" lines, events ending at a blank line, ":" comments
// (heartbeats) skipped, data lines joined by "\n". As the format says, an
// id line takes effect when its event is dispatched: an event cut short
// by a broken connection does not move lastID, so resuming after lastID
// loses nothing.
type sseReader struct {
	br     *bufio.Reader
	lastID string
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{br: bufio.NewReaderSize(r, 32<<10)} }

// next returns the next event with data; io.EOF when the stream ends
// cleanly between events.
func (r *sseReader) next() (sseEvent, error) {
	var (
		data    bytes.Buffer
		hasData bool
		event   string
		size    int
		id      = r.lastID // the last event ID buffer
	)
	for {
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole, within the cap.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > maxEventBytes {
					return sseEvent{}, fmt.Errorf("server-sent event over %d bytes", maxEventBytes)
				}
				line, err = r.br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 && !hasData && event == "" {
				return sseEvent{}, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return sseEvent{}, io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			r.lastID = id
			if !hasData {
				event = "" // an event without data is not dispatched
				continue
			}
			if event == "" {
				event = "message"
			}
			return sseEvent{ID: id, Event: event, Data: data.Bytes()}, nil
		}
		if line[0] == ':' {
			continue
		}
		if size += len(line); size > maxEventBytes {
			return sseEvent{}, fmt.Errorf("server-sent event over %d bytes", maxEventBytes)
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				id = string(value)
			}
		}
	}
}

// openSSE sends a GET for an event stream and checks that one came back.
func (c *Client) openSSE(ctx context.Context, route string, q url.Values, lastEventID string) (*http.Response, error) {
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint(route, q), nil)
	if err != nil {
		return nil, err
	}
	return c.doSSE(req, lastEventID)
}

// doSSE sends req asking for text/event-stream, resuming after lastEventID
// when set.
func (c *Client) doSSE(req *http.Request, lastEventID string) (*http.Response, error) {
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("client: %s %s: answer is %q, not an event stream", req.Method, req.URL.Path, mt)
	}
	return resp, nil
}

// EventStream is a stream of server-sent events decoded as T. Call Next
// until it returns an error, and Close when done.
//
// A resuming stream (the control plane's JobEvents) reopens itself after
// a dropped connection, from the last event it delivered, so its reader
// sees every event once, in order. Next does the reopening, on the
// caller's goroutine; Close may be called from any goroutine, and makes a
// blocked Next return.
type EventStream[T any] struct {
	decode func(sseEvent) (T, bool, error)
	// resume, when set, reopens the stream after lastID; attempt counts
	// the breaks since an event last came through, from 1. It waits
	// before dialing as it sees fit.
	resume func(attempt int, lastID string) (io.ReadCloser, error)
	// last, when set, tells the final event: after it Next returns io.EOF
	// without reading on.
	last func(T) bool

	r        *sseReader // read by Next only
	breaks   int        // consecutive breaks without an event since
	finished bool

	mu     sync.Mutex
	body   io.ReadCloser // the open response body; replaced on resume
	closed bool
}

// maxResumes is how many times in a row a stream is reopened without an
// event coming through before Next gives up.
const maxResumes = 10

// Next blocks for the next event. It returns io.EOF when the server ends
// the stream (for a resuming stream: after its final event), or the error
// that broke it (the context's, after it ends).
func (s *EventStream[T]) Next() (T, error) {
	var zero T
	for {
		if s.finished {
			return zero, io.EOF
		}
		ev, err := s.r.next()
		if err != nil {
			if err = s.reopen(err); err != nil {
				return zero, err
			}
			continue
		}
		v, ok, err := s.decode(ev)
		if err != nil {
			return zero, err
		}
		if ok {
			s.breaks = 0
			if s.last != nil && s.last(v) {
				s.finished = true
			}
			return v, nil
		}
	}
}

// reopen resumes the stream after it broke with cause, or returns the
// error Next should report.
func (s *EventStream[T]) reopen(cause error) error {
	for {
		if s.resume == nil || s.isClosed() {
			return cause
		}
		s.breaks++
		if s.breaks > maxResumes {
			return fmt.Errorf("client: event stream lost %d times in a row: %w", maxResumes, cause)
		}
		body, err := s.resume(s.breaks, s.r.lastID)
		if err != nil {
			if !retryable(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			cause = err
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			body.Close()
			return cause
		}
		s.body.Close()
		s.body = body
		s.mu.Unlock()
		s.r = &sseReader{br: bufio.NewReaderSize(body, 32<<10), lastID: s.r.lastID}
		return nil
	}
}

func (s *EventStream[T]) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// LastEventID is the id of the last event read, to resume from with a new
// stream after this one breaks.
func (s *EventStream[T]) LastEventID() string { return s.r.lastID }

// Close ends the stream.
func (s *EventStream[T]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.body.Close()
}

func newEventStream[T any](body io.ReadCloser, decode func(sseEvent) (T, bool, error)) *EventStream[T] {
	return &EventStream[T]{body: body, r: newSSEReader(body), decode: decode}
}

// ProcessEvent is one event of GET /v1/events.
type ProcessEvent struct {
	ID      string // the event's sequence id; pass it to Events to resume after it
	Type    string // sandboxapi.EventProcessCreated, ...Updated, ...Exited, ...Deleted
	Process sandboxapi.Process
}

// Events streams process life-cycle events (GET /v1/events). With
// lastEventID set, it resumes after that event; an empty one starts with
// events from now on. Heartbeats are skipped.
func (c *Client) Events(ctx context.Context, lastEventID string) (*EventStream[ProcessEvent], error) {
	resp, err := c.openSSE(ctx, "/events", nil, lastEventID)
	if err != nil {
		return nil, err
	}
	return newEventStream(resp.Body, func(ev sseEvent) (ProcessEvent, bool, error) {
		pe := ProcessEvent{ID: ev.ID, Type: ev.Event}
		if err := json.Unmarshal(ev.Data, &pe.Process); err != nil {
			return pe, false, fmt.Errorf("client: event %s %q: %w", ev.ID, ev.Event, err)
		}
		return pe, true, nil
	}), nil
}
