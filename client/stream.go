package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// OffsetOldest, as ConnectOptions.Offset, starts at the oldest output the
// daemon still retains, without a Truncated event for what it dropped.
const OffsetOldest = -1

// Tuning of Stream.
const (
	streamReadLimit = 16 << 20         // largest frame accepted from the daemon
	stdinFrameBytes = 16 << 10         // stdin is sent in frames of at most this size
	pingInterval    = 30 * time.Second // how often a reconnecting stream checks its connection
	redialMin       = 50 * time.Millisecond
	redialMax       = 2 * time.Second
)

// ErrStreamClosed is returned by a Stream's methods after Close.
var ErrStreamClosed = errors.New("client: stream closed")

// ConnectOptions configure Connect.
type ConnectOptions struct {
	// Offset is the first output byte wanted: 0 for everything (a
	// Truncated event says if the start is gone), the Offset() of an
	// earlier Stream to resume it, or OffsetOldest.
	Offset int64
	// Reconnect makes the Stream survive dropped connections: it redials
	// from the offset after the last byte it received, with backoff, until
	// the context given to Connect ends or the daemon refuses (the process
	// was deleted, the token is wrong). Nothing still within the daemon's
	// replay window is lost; output that left it shows as a Truncated event.
	Reconnect bool
}

// Event is one item of a Stream: output bytes, or one of the notices
// Truncated and Exit.
type Event struct {
	// Stream is sandboxapi.StreamStdout (stdout, or the terminal of a PTY
	// process) or sandboxapi.StreamStderr; 0 for notices.
	Stream byte
	// Data is the output; Offset the offset of Data[0] in the process's
	// output log (both streams count).
	Data   []byte
	Offset int64
	// Truncated is set when output was lost: the next byte has offset
	// Truncated.From.
	Truncated *Truncated
	// Exit is set when the process has ended; it is the last event.
	Exit *Exit
	// Refused is set when the daemon refused something this client sent
	// (input to a closed stdin, a resize of a process without a PTY...):
	// its reason. The stream goes on.
	Refused string
}

// Truncated says output before From left the daemon's window unseen.
type Truncated struct{ From int64 }

// Exit is how a process ended: an exit code, or the name of the signal
// that killed it.
type Exit struct {
	ExitCode *int
	Signal   *string
}

// Stream is a live connection to a process's output and input
// (GET /v1/processes/{ref}/connect). Read it with Next; write stdin with
// Write; send terminal and signal controls with Resize, Signal and
// CloseStdin. All methods are safe for concurrent use; Next must be called
// by one goroutine at a time.
//
// A Stream owns one goroutine, which reads the WebSocket and redials it
// (with Reconnect, a second one pings each connection, so a half-open one
// is noticed). They stop once Next has the Exit event or the error that
// ended the stream, when Connect's context ends, or on Close, which waits
// for them. Always Close a Stream.
type Stream struct {
	c         *Client
	ref       string
	reconnect bool

	// life bounds everything the stream does; cancel ends it.
	life   context.Context
	cancel context.CancelFunc

	events chan Event    // closed by the reader when it stops; err is set first
	err    error         // why the stream stopped; read only after events is closed
	done   chan struct{} // closed when the reader has returned

	closing   atomic.Bool
	closeOnce sync.Once
	delivered atomic.Int64 // offset after the last byte Next returned

	mu          sync.Mutex
	conn        *websocket.Conn // the live connection; nil while redialing
	connChanged chan struct{}   // closed (and replaced) whenever conn changes
}

// Connect opens a Stream on a process (by id or tag), replaying its
// retained output from opts.Offset and then following it live. ctx bounds
// the whole life of the Stream, reconnections included. Errors of the
// first dial are returned here (ErrNotFound for an unknown process); later
// ones by Next. A reconnecting Stream follows the process the ref named
// when it connected, even if its tag moves on.
func (c *Client) Connect(ctx context.Context, ref string, opts ConnectOptions) (*Stream, error) {
	if opts.Offset < OffsetOldest {
		return nil, fmt.Errorf("client: connect %q: offset %d: %w", ref, opts.Offset, ErrInvalid)
	}
	if opts.Reconnect {
		// Redial by id: a tag may pass to a new process meanwhile.
		p, err := c.GetProcess(ctx, ref)
		if err != nil {
			return nil, err
		}
		ref = p.ID
	}
	life, cancel := context.WithCancel(ctx)
	s := &Stream{
		c: c, ref: ref, reconnect: opts.Reconnect,
		life: life, cancel: cancel,
		events:      make(chan Event, 16),
		done:        make(chan struct{}),
		connChanged: make(chan struct{}),
	}
	offset := max(opts.Offset, 0)
	conn, err := s.dial(life, offset)
	if err != nil {
		cancel()
		return nil, err
	}
	s.delivered.Store(offset)
	s.setConn(conn)
	go s.run(conn, offset, opts.Offset == OffsetOldest)
	return s, nil
}

// dial opens one WebSocket from offset.
func (s *Stream) dial(ctx context.Context, offset int64) (*websocket.Conn, error) {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	route := processPath(s.ref, "/connect")
	h := http.Header{}
	s.c.authHeader(h)
	conn, resp, err := websocket.Dial(ctx, s.c.endpoint(route, q), &websocket.DialOptions{
		HTTPClient: s.c.hc,
		HTTPHeader: h,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, parseError(s.c.origin, http.MethodGet, s.c.prefix+route, resp)
		}
		return nil, fmt.Errorf("client: connect %q: %w", s.ref, err)
	}
	conn.SetReadLimit(streamReadLimit)
	return conn, nil
}

func (s *Stream) setConn(conn *websocket.Conn) {
	s.mu.Lock()
	s.conn = conn
	close(s.connChanged)
	s.connChanged = make(chan struct{})
	s.mu.Unlock()
}

// run is the reader goroutine: it reads conn, and with reconnect redials
// when a connection breaks, until the exit frame or the end of life.
func (s *Stream) run(conn *websocket.Conn, offset int64, skipTruncated bool) {
	defer close(s.done)
	for {
		err := s.readConn(conn, &offset, &skipTruncated)
		conn.CloseNow()
		s.setConn(nil)
		switch {
		case err == nil: // the process exited
			s.stop(io.EOF)
			return
		case s.closing.Load():
			s.stop(ErrStreamClosed)
			return
		case s.life.Err() != nil:
			s.stop(fmt.Errorf("client: stream of %q: %w", s.ref, context.Cause(s.life)))
			return
		case !s.reconnect:
			s.stop(fmt.Errorf("client: stream of %q: connection lost: %w", s.ref, err))
			return
		}
		if conn, err = s.redial(offset); err != nil {
			s.stop(err)
			return
		}
		s.setConn(conn)
	}
}

// stop records why the stream ended and closes events.
func (s *Stream) stop(err error) {
	if s.closing.Load() {
		err = ErrStreamClosed
	}
	s.err = err
	close(s.events)
}

// redial dials from offset with exponential backoff until it connects,
// the daemon refuses, or life ends.
func (s *Stream) redial(offset int64) (*websocket.Conn, error) {
	delay := time.Duration(0)
	for {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.life.Done():
				t.Stop()
				return nil, s.lifeErr()
			}
		}
		conn, err := s.dial(s.life, offset)
		if err == nil {
			return conn, nil
		}
		if s.life.Err() != nil {
			return nil, s.lifeErr()
		}
		if !retryable(err) {
			return nil, fmt.Errorf("client: reconnect to %q: %w", s.ref, err)
		}
		delay = min(max(2*delay, redialMin), redialMax)
	}
}

func (s *Stream) lifeErr() error {
	if s.closing.Load() {
		return ErrStreamClosed
	}
	return fmt.Errorf("client: stream of %q: %w", s.ref, context.Cause(s.life))
}

// readConn reads frames until the exit frame (nil) or an error, keeping
// *offset at the offset after the last byte read.
func (s *Stream) readConn(conn *websocket.Conn, offset *int64, skipTruncated *bool) error {
	if s.reconnect {
		stopPing := s.keepAlive(conn)
		defer stopPing()
	}
	for {
		typ, data, err := conn.Read(s.life)
		if err != nil {
			return err
		}
		if typ == websocket.MessageBinary {
			if len(data) < 2 { // a stream id and no payload carries nothing
				continue
			}
			ev := Event{Stream: data[0], Data: data[1:], Offset: *offset}
			*offset += int64(len(ev.Data))
			*skipTruncated = false
			if !s.emit(ev) {
				return s.life.Err()
			}
			continue
		}
		var f struct {
			sandboxapi.ControlFrame
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			continue // not ours to judge; the contract may grow new frames
		}
		switch f.Type {
		case sandboxapi.FrameError:
			if !s.emit(Event{Offset: *offset, Refused: f.Detail}) {
				return s.life.Err()
			}
		case sandboxapi.FrameTruncated:
			*offset = f.From
			if *skipTruncated {
				*skipTruncated = false
				s.delivered.Store(f.From)
				continue
			}
			if !s.emit(Event{Offset: f.From, Truncated: &Truncated{From: f.From}}) {
				return s.life.Err()
			}
		case sandboxapi.FrameExit:
			if !s.emit(Event{Offset: *offset, Exit: &Exit{ExitCode: f.ExitCode, Signal: f.Signal}}) {
				return s.life.Err()
			}
			// The daemon closes normally after the exit frame; answer it.
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return nil
		}
	}
}

// keepAlive pings conn every pingInterval, so a half-open connection (a
// peer that vanished without a FIN) is noticed and redialed. The returned
// function stops it.
func (s *Stream) keepAlive(conn *websocket.Conn) (stop func()) {
	ctx, cancel := context.WithCancel(s.life)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(pingInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, pingInterval/2)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				conn.CloseNow() // the reader sees the error and redials
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (s *Stream) emit(ev Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-s.life.Done():
		return false
	}
}

// Next returns the next event. After the Exit event it returns io.EOF;
// when the stream broke (without Reconnect, or the daemon refused a
// redial), that error; after Close, ErrStreamClosed. Ending ctx only ends
// this wait, not the stream.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return Event{}, s.err
		}
		switch {
		case ev.Truncated != nil:
			s.delivered.Store(ev.Truncated.From)
		case len(ev.Data) > 0:
			s.delivered.Store(ev.Offset + int64(len(ev.Data)))
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Offset is the offset after the last byte Next returned: the Offset to
// pass to Connect to carry on where this Stream stopped.
func (s *Stream) Offset() int64 { return s.delivered.Load() }

// Write sends p to the process's stdin or terminal, in binary frames. While
// the stream is reconnecting it waits for the new connection; a frame whose
// send failed is sent once more on it.
func (s *Stream) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), stdinFrameBytes)]
		if err := s.send(s.life, websocket.MessageBinary, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// Resize sets the terminal size of a PTY process.
func (s *Stream) Resize(ctx context.Context, rows, cols int) error {
	if err := sandboxapi.ValidSize(rows, cols); err != nil {
		return fmt.Errorf("client: resize %q: %w: %w", s.ref, ErrInvalid, err)
	}
	return s.control(ctx, sandboxapi.ControlFrame{Type: sandboxapi.FrameResize, Rows: rows, Cols: cols})
}

// Signal sends a signal, by name ("SIGINT") or number ("2").
func (s *Stream) Signal(ctx context.Context, sig string) error {
	return s.control(ctx, sandboxapi.ControlFrame{Type: sandboxapi.FrameSignal, Signal: &sig})
}

// CloseStdin closes the process's stdin.
func (s *Stream) CloseStdin(ctx context.Context) error {
	return s.control(ctx, sandboxapi.ControlFrame{Type: sandboxapi.FrameCloseStdin})
}

func (s *Stream) control(ctx context.Context, f sandboxapi.ControlFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("client: %s frame: %w", f.Type, err)
	}
	return s.send(ctx, websocket.MessageText, b)
}

// send writes one message on the live connection, waiting for one while
// redialing, and retries once on the next connection if the write fails.
func (s *Stream) send(ctx context.Context, typ websocket.MessageType, msg []byte) error {
	var failed *websocket.Conn
	for attempt := 0; ; attempt++ {
		conn, err := s.liveConn(ctx, failed)
		if err != nil {
			return err
		}
		err = conn.Write(ctx, typ, msg)
		if err == nil {
			return nil
		}
		if !s.reconnect || attempt == 1 || ctx.Err() != nil || s.life.Err() != nil {
			return fmt.Errorf("client: write to %q: %w", s.ref, err)
		}
		conn.CloseNow() // make sure the reader notices and redials
		failed = conn
	}
}

// liveConn returns the current connection, other than not, waiting while
// there is none.
func (s *Stream) liveConn(ctx context.Context, not *websocket.Conn) (*websocket.Conn, error) {
	for {
		s.mu.Lock()
		conn, changed := s.conn, s.connChanged
		s.mu.Unlock()
		if conn != nil && conn != not {
			return conn, nil
		}
		select {
		case <-changed:
		case <-s.done:
			if s.closing.Load() {
				return nil, ErrStreamClosed
			}
			return nil, fmt.Errorf("client: write to %q: %w", s.ref, ErrStreamClosed)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close ends the stream: it closes the connection (never the process) and
// waits for the stream's goroutine.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			go func() { <-ctx.Done(); conn.CloseNow() }()
			_ = conn.Close(websocket.StatusNormalClosure, "")
			cancel()
		}
		s.cancel()
	})
	<-s.done
	return nil
}
