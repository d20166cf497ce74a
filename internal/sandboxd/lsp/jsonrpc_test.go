package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the other end of a Conn under test: it reads the frames the
// Conn writes and writes raw bytes back.
type peer struct {
	r *bufio.Reader
	w io.WriteCloser
}

// pipeConn connects a Conn with handler h to a peer over two pipes.
func pipeConn(t *testing.T, h Handler, maxMsg int) (*Conn, *peer) {
	t.Helper()
	cr, pw := io.Pipe() // peer → conn
	pr, cw := io.Pipe() // conn → peer
	c := NewConn(cr, cw, h, maxMsg)
	t.Cleanup(func() {
		pw.Close()
		pr.Close()
		c.Close()
	})
	return c, &peer{r: bufio.NewReader(pr), w: pw}
}

// read reads one frame the Conn wrote.
func (p *peer) read(t *testing.T) message {
	t.Helper()
	n := -1
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			t.Fatalf("peer read header: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(p.r, body); err != nil {
		t.Fatalf("peer read body: %v", err)
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("peer got %q: %v", body, err)
	}
	return m
}

func (p *peer) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := io.WriteString(p.w, raw); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// recorder is a Handler that records notifications and answers requests.
type recorder struct {
	mu    sync.Mutex
	notes []string
	got   chan string
}

func (r *recorder) Notify(method string, params json.RawMessage) {
	r.mu.Lock()
	r.notes = append(r.notes, method+" "+string(params))
	r.mu.Unlock()
	if r.got != nil {
		r.got <- method
	}
}

func (r *recorder) Request(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "echo" {
		return json.RawMessage(params), nil
	}
	return nil, &RPCError{Code: codeMethodNotFound, Message: "no " + method}
}

func TestConnCall(t *testing.T) {
	c, p := pipeConn(t, &recorder{}, 0)
	done := make(chan error, 1)
	var res struct{ Answer int }
	go func() { done <- c.Call(context.Background(), "ask", map[string]int{"q": 1}, &res) }()
	m := p.read(t)
	if m.Method != "ask" || string(m.ID) != "1" || string(m.Params) != `{"q":1}` || m.JSONRPC != "2.0" {
		t.Fatalf("request = %+v; want ask #1 with params", m)
	}
	// Headers in any case and an extra Content-Type are fine.
	body := `{"jsonrpc":"2.0","id":1,"result":{"Answer":42}}`
	p.send(t, fmt.Sprintf("content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s", len(body), body))
	if err := <-done; err != nil || res.Answer != 42 {
		t.Fatalf("Call = %v, %+v; want 42", err, res)
	}

	go func() { done <- c.Call(context.Background(), "fail", nil, nil) }()
	m = p.read(t)
	p.send(t, frame(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32602,"message":"bad params"}}`))
	var re *RPCError
	if err := <-done; !errors.As(err, &re) || re.Code != -32602 || re.Message != "bad params" {
		t.Fatalf("Call = %v; want the RPC error", err)
	}
}

func TestConnCancel(t *testing.T) {
	c, p := pipeConn(t, &recorder{}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, "slow", nil, nil) }()
	m := p.read(t)
	cancel()
	n := p.read(t)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v; want context.Canceled", err)
	}
	if n.Method != "$/cancelRequest" || string(n.Params) != `{"id":`+string(m.ID)+`}` {
		t.Fatalf("after cancel the peer got %+v; want $/cancelRequest for %s", n, m.ID)
	}
	// A late answer to the cancelled call is dropped quietly.
	p.send(t, frame(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":null}`))
}

func TestConnServesPeerRequests(t *testing.T) {
	rec := &recorder{got: make(chan string, 4)}
	_, p := pipeConn(t, rec, 0)
	p.send(t, frame(`{"jsonrpc":"2.0","id":"abc","method":"echo","params":[1,2]}`))
	m := p.read(t)
	if string(m.ID) != `"abc"` || string(m.Result) != "[1,2]" || m.Error != nil {
		t.Errorf("answer to echo = %+v; want the params back under id \"abc\"", m)
	}
	p.send(t, frame(`{"jsonrpc":"2.0","id":7,"method":"unknown/thing"}`))
	m = p.read(t)
	if string(m.ID) != "7" || m.Error == nil || m.Error.Code != codeMethodNotFound {
		t.Errorf("answer to an unknown method = %+v; want MethodNotFound", m)
	}
	p.send(t, frame(`{"jsonrpc":"2.0","method":"note","params":{"x":1}}`))
	if got := <-rec.got; got != "note" {
		t.Errorf("notification %q; want note", got)
	}
}

func TestConnHostileInput(t *testing.T) {
	for _, c := range []struct {
		name, input string
		broken      bool // the framing is lost: the connection ends
	}{
		{"no Content-Length", "Content-Type: x\r\n\r\n{}", true},
		{"bad Content-Length", "Content-Length: -4\r\n\r\n", true},
		{"header without colon", "Content-Length 4\r\n\r\n", true},
		{"header line too long", "X-Junk: " + strings.Repeat("a", 10000) + "\r\n", true},
		{"too many headers", strings.Repeat("X: y\r\n", 100), true},
		{"body cut short", "Content-Length: 100\r\n\r\n{}", true},
		{"oversize body skipped", frame(`{"jsonrpc":"2.0","method":"big","params":"` + strings.Repeat("z", 300) + `"}`), false},
		{"not JSON", frame("hello world"), false},
		{"an answer to nobody", frame(`{"jsonrpc":"2.0","id":99,"result":1}`), false},
		{"an id that is not ours", frame(`{"jsonrpc":"2.0","id":"x","result":1}`), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{got: make(chan string, 4)}
			conn, p := pipeConn(t, rec, 256)
			if c.broken {
				go func() {
					// The connection may stop reading half-way: write
					// on the side, and end the input once written.
					_, _ = io.WriteString(p.w, c.input)
					p.w.Close()
				}()
				<-conn.Done()
				if err := conn.Err(); err == nil {
					t.Errorf("Err() = nil; want why the framing broke")
				}
				if err := conn.Call(context.Background(), "x", nil, nil); err == nil {
					t.Errorf("Call on a broken connection = nil; want an error")
				}
				return
			}
			// The connection still works after the bad message.
			p.send(t, c.input)
			p.send(t, frame(`{"jsonrpc":"2.0","method":"after"}`))
			select {
			case got := <-rec.got:
				if got != "after" {
					t.Errorf("next notification %q; want after", got)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the connection stopped reading after the bad message")
			}
		})
	}
}

func TestConnCloseFailsPendingCalls(t *testing.T) {
	c, p := pipeConn(t, &recorder{}, 0)
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "never", nil, nil) }()
	p.read(t)
	p.w.Close() // the server's output ends (it exited)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "connection closed") {
		t.Fatalf("Call after the peer closed = %v; want connection closed", err)
	}
}
