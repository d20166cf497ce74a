package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultMaxMessage bounds one message body from a server.
	DefaultMaxMessage = 32 << 20
	// maxHeaderLine and maxHeaders bound the header block of a message.
	maxHeaderLine = 4096
	maxHeaders    = 32
	// writeTimeout bounds the write of one message to a server.
	writeTimeout = 30 * time.Second
)

// JSON-RPC error codes used here.
const (
	codeMethodNotFound   = -32601
	codeRequestCancelled = -32800
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Handler receives what the other side sends on its own initiative.
// Notify runs on the connection's reader and must return quickly; each
// Request runs on its own goroutine and its answer (or error, an
// *RPCError for a specific code) is sent back.
type Handler interface {
	Notify(method string, params json.RawMessage)
	Request(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Conn is a JSON-RPC 2.0 connection framed by the LSP base protocol: a
// header block with Content-Length, then that many bytes of JSON.
//
// Lifetime: NewConn starts one reader goroutine, which ends when the
// input ends or breaks (a framing error) or Close is called; Close also
// waits for the handlers of requests from the other side. Calls waiting
// for an answer fail once the reader has ended.
type Conn struct {
	w       io.WriteCloser
	r       io.ReadCloser
	handler Handler
	maxMsg  int

	wmu  sync.Mutex // one message written at a time
	werr error      // a failed write: nothing more can be sent

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *message
	err     error // why the reader ended; set before done closes

	done      chan struct{} // closed when the reader has ended
	hctx      context.Context
	hcancel   context.CancelFunc
	handlers  sync.WaitGroup
	closeOnce sync.Once
	// Dropped counts messages discarded for being over maxMsg.
	dropped int
}

// NewConn starts a connection reading r and writing w. maxMsg bounds a
// message body (DefaultMaxMessage when 0): a larger one is skipped, and
// the call it answered, if any, runs into its deadline.
func NewConn(r io.ReadCloser, w io.WriteCloser, h Handler, maxMsg int) *Conn {
	if maxMsg <= 0 {
		maxMsg = DefaultMaxMessage
	}
	c := &Conn{w: w, r: r, handler: h, maxMsg: maxMsg, pending: map[int64]chan *message{}, done: make(chan struct{})}
	c.hctx, c.hcancel = context.WithCancel(context.Background())
	go c.read()
	return c
}

// Done is closed when the connection can no longer receive.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, once Done is closed.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes both directions, waits for the reader and for the
// handlers of the other side's requests.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.w.Close()
		c.r.Close()
		c.hcancel()
	})
	<-c.done
	c.handlers.Wait()
	return nil
}

func (c *Conn) read() {
	br := bufio.NewReaderSize(c.r, maxHeaderLine)
	var err error
	for {
		var body []byte
		body, err = c.readMessage(br)
		if err != nil {
			break
		}
		if body == nil {
			continue // skipped: too large
		}
		var m message
		if jerr := json.Unmarshal(body, &m); jerr != nil {
			continue // not JSON-RPC: ignore, as the framing is still sound
		}
		c.dispatch(&m)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || strings.Contains(err.Error(), "file already closed") {
		err = io.EOF
	}
	c.mu.Lock()
	c.err = err
	pending := c.pending
	c.pending = map[int64]chan *message{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	close(c.done)
}

// readMessage reads one framed message. It returns nil, nil for a body
// over the limit, which it skips.
func (c *Conn) readMessage(br *bufio.Reader) ([]byte, error) {
	length := -1
	for i := 0; ; i++ {
		if i > maxHeaders {
			return nil, errors.New("lsp: too many header lines")
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("lsp: header line too long")
		}
		if err != nil {
			return nil, err
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s == "" {
			if length < 0 {
				return nil, errors.New("lsp: message without Content-Length")
			}
			break
		}
		name, value, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("lsp: malformed header line %q", s)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("lsp: bad Content-Length %q", value)
			}
			length = n
		}
	}
	if length > c.maxMsg {
		if _, err := io.CopyN(io.Discard, br, int64(length)); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.dropped++
		c.mu.Unlock()
		return nil, nil
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	return body, nil
}

func (c *Conn) dispatch(m *message) {
	switch {
	case m.Method != "" && len(m.ID) > 0:
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			res, err := c.handler.Request(c.hctx, m.Method, m.Params)
			c.reply(m.ID, res, err)
		}()
	case m.Method != "":
		c.handler.Notify(m.Method, m.Params)
	case len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return // not an id of ours
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ok {
			ch <- m
		}
	}
}

// reply answers a request of the other side.
func (c *Conn) reply(id json.RawMessage, res any, err error) {
	m := message{JSONRPC: "2.0", ID: id}
	if err != nil {
		var re *RPCError
		if !errors.As(err, &re) {
			re = &RPCError{Code: -32603, Message: err.Error()}
		}
		m.Error = re
	} else {
		b, merr := json.Marshal(res)
		if merr != nil {
			m.Error = &RPCError{Code: -32603, Message: merr.Error()}
		} else {
			m.Result = b
		}
	}
	_ = c.write(&m)
}

// Call sends a request and decodes its result into result (which may be
// nil). When ctx ends first the request is cancelled ($/cancelRequest)
// and ctx's error returned. An error answer is an *RPCError.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("lsp: %s: connection closed: %w", method, err)
	}
	c.nextID++
	id := c.nextID
	ch := make(chan *message, 1)
	c.pending[id] = ch
	c.mu.Unlock()

	m := message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method}
	if err := c.setParams(&m, params); err != nil {
		c.forget(id)
		return err
	}
	if err := c.write(&m); err != nil {
		c.forget(id)
		return fmt.Errorf("lsp: %s: %w", method, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return fmt.Errorf("lsp: %s: connection closed: %w", method, c.Err())
		}
		if resp.Error != nil {
			return resp.Error
		}
		if result != nil && len(resp.Result) > 0 {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				return fmt.Errorf("lsp: %s: decoding the result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		_ = c.Notify("$/cancelRequest", map[string]int64{"id": id})
		return ctx.Err()
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	m := message{JSONRPC: "2.0", Method: method}
	if err := c.setParams(&m, params); err != nil {
		return err
	}
	return c.write(&m)
}

func (c *Conn) setParams(m *message, params any) error {
	if params == nil {
		return nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("lsp: %s: encoding params: %w", m.Method, err)
	}
	m.Params = b
	return nil
}

// write sends one framed message.
func (c *Conn) write(m *message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "Content-Length: %d\r\n\r\n", len(body))
	buf.Write(body)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	// A server that stops reading its input must not block us forever:
	// pipes (*os.File) take a deadline.
	if d, ok := c.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		_ = d.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	if _, err = c.w.Write(buf.Bytes()); err != nil {
		// Part of a message may have gone out: the framing is lost.
		c.werr = fmt.Errorf("lsp: writing to the server: %w", err)
		return c.werr
	}
	return nil
}
