package sandboxd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// api is a tiny raw-HTTP helper: these tests check the wire contract
// itself, so they do not go through the SDK.
type api struct {
	t *testing.T
	d *sandboxdtest.Daemon
}

func newAPI(t *testing.T) *api {
	return &api{t: t, d: sandboxdtest.Start(t, sandboxdtest.Options{})}
}

func (a *api) do(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, _ := json.Marshal(b)
		rd = bytes.NewReader(js)
	}
	req, _ := http.NewRequest(method, a.d.URL+path, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := a.d.HTTP.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

func (a *api) spawn(req sandboxapi.SpawnRequest) sandboxapi.Process {
	a.t.Helper()
	resp, body := a.do("POST", "/v1/processes", req)
	if resp.StatusCode != http.StatusCreated {
		a.t.Fatalf("spawn %+v: %d %s", req, resp.StatusCode, body)
	}
	var p sandboxapi.Process
	if err := json.Unmarshal(body, &p); err != nil {
		a.t.Fatal(err)
	}
	return p
}

func (a *api) waitExit(ref string) sandboxapi.Process {
	a.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := a.do("GET", "/v1/processes/"+ref, nil)
		var p sandboxapi.Process
		_ = json.Unmarshal(body, &p)
		if p.Status == sandboxapi.StatusExited {
			return p
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("process %s did not exit: %s", ref, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (a *api) output(ref string, offset int64) ([]byte, http.Header) {
	a.t.Helper()
	resp, body := a.do("GET", fmt.Sprintf("/v1/processes/%s/output?offset=%d&limit=%d", ref, offset, 16<<20), nil)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("output: %d %s", resp.StatusCode, body)
	}
	return body, resp.Header
}

func TestProcessRouteErrors(t *testing.T) {
	a := newAPI(t)
	running := a.spawn(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}, Tag: "busy"})
	exited := a.spawn(sandboxapi.SpawnRequest{Command: "true"})
	a.waitExit(exited.ID)
	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"empty body", "POST", "/v1/processes", "", 400},
		{"malformed JSON", "POST", "/v1/processes", `{"command":`, 400},
		{"unknown field", "POST", "/v1/processes", `{"command":"true","bogus":1}`, 400},
		{"wrong type", "POST", "/v1/processes", `{"command":42}`, 400},
		{"trailing data", "POST", "/v1/processes", `{"command":"true"} {}`, 400},
		{"invalid UTF-8", "POST", "/v1/processes", []byte("{\"command\":\"\xff\"}"), 400},
		{"huge body", "POST", "/v1/processes", `{"command":"` + strings.Repeat("a", 2<<20) + `"}`, 413},
		{"missing command", "POST", "/v1/processes", `{}`, 400},
		{"executable not found", "POST", "/v1/processes", `{"command":"no-such-cmd-xyz"}`, 422},
		{"tag taken", "POST", "/v1/processes", `{"command":"true","tag":"busy"}`, 409},
		{"bad pty size", "POST", "/v1/processes", `{"command":"sh","pty":{"rows":0,"cols":0}}`, 400},
		{"unknown ref", "GET", "/v1/processes/nope", nil, 404},
		{"delete unknown", "DELETE", "/v1/processes/nope", nil, 404},
		{"bad status filter", "GET", "/v1/processes?status=zombie", nil, 400},
		{"bad pty filter", "GET", "/v1/processes?pty=maybe", nil, 400},
		{"bad signal", "POST", "/v1/processes/busy/signal", `{"signal":"SIGNOPE"}`, 400},
		{"signal exited", "POST", "/v1/processes/" + exited.ID + "/signal", `{"signal":"SIGTERM"}`, 409},
		{"resize non-pty", "POST", "/v1/processes/busy/resize", `{"rows":10,"cols":10}`, 409},
		{"input without stdin", "POST", "/v1/processes/busy/input", `{"data":"x"}`, 409},
		{"input both forms", "POST", "/v1/processes/busy/input", `{"data":"x","data_base64":"eA=="}`, 400},
		{"input bad base64", "POST", "/v1/processes/busy/input", `{"data_base64":"!!"}`, 400},
		{"close-stdin without stdin", "POST", "/v1/processes/busy/close-stdin", nil, 409},
		{"bad offset", "GET", "/v1/processes/busy/output?offset=-5", nil, 400},
		{"bad stream", "GET", "/v1/processes/busy/output?stream=stdin", nil, 400},
		{"exec no command", "POST", "/v1/exec", `{}`, 400},
		{"exec not found", "POST", "/v1/exec", `{"command":"no-such-cmd-xyz"}`, 422},
		{"exec bad cwd", "POST", "/v1/exec", `{"command":"true","cwd":"/no/such"}`, 422},
		{"bad Last-Event-ID", "GET", "/v1/events", nil, 400},
		{"method not allowed", "PUT", "/v1/processes", `{}`, 405},
		{"no route", "GET", "/v1/nothing-here", nil, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.name == "bad Last-Event-ID" {
				hdr = []string{"Last-Event-ID", "abc"}
			}
			resp, body := a.do(tt.method, tt.path, tt.body, hdr...)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s = %d %s; want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
				t.Errorf("Content-Type = %q; want %q", ct, problem.ContentType)
			}
			var pd problem.Details
			if err := json.Unmarshal(body, &pd); err != nil || pd.Status != tt.want || pd.Title == "" {
				t.Errorf("problem body = %s (%v); want status %d and a title", body, err, tt.want)
			}
		})
	}
	_ = running
}

func TestProcessLifecycleOverHTTP(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "cat", Stdin: true, Tag: "cat", Label: "Cat", Env: map[string]string{"A": "1"}})
	if p.Status != "running" || p.PID == 0 || p.Tag != "cat" || p.Label != "Cat" || p.Env["A"] != "1" || p.ExitCode != nil {
		t.Fatalf("spawned = %+v; want running with pid, tag, label, env", p)
	}
	for _, in := range []string{`{"data":"hello "}`, `{"data_base64":"d29ybGQK"}`} {
		if resp, body := a.do("POST", "/v1/processes/cat/input", in); resp.StatusCode != 204 {
			t.Fatalf("input: %d %s", resp.StatusCode, body)
		}
	}
	resp, body := a.do("GET", "/v1/processes/cat/output?offset=0&wait_ms=5000", nil)
	for resp.StatusCode == 200 && len(body) < len("hello world\n") {
		more, h := a.output("cat", 0)
		body, resp.Header = more, h
	}
	if string(body) != "hello world\n" {
		t.Fatalf("output = %q; want %q", body, "hello world\n")
	}
	if resp, _ := a.do("POST", "/v1/processes/cat/close-stdin", nil); resp.StatusCode != 204 {
		t.Fatalf("close-stdin = %d", resp.StatusCode)
	}
	ex := a.waitExit("cat")
	if ex.ExitCode == nil || *ex.ExitCode != 0 || ex.OutputBytes != 12 || ex.ExitedAt == nil {
		t.Fatalf("exited = %+v; want exit 0 with 12 output bytes", ex)
	}
	_, h := a.output(p.ID, 0)
	if h.Get("X-Offset") != "0" || h.Get("X-Next-Offset") != "12" || h.Get("X-Truncated") != "false" {
		t.Errorf("output headers = %v; want offset 0, next 12, not truncated", h)
	}
	_, body = a.do("GET", "/v1/processes?status=exited&tag=cat", nil)
	var list sandboxapi.ProcessList
	_ = json.Unmarshal(body, &list)
	if len(list.Processes) != 1 || list.Processes[0].ID != p.ID {
		t.Errorf("filtered list = %s; want just %s", body, p.ID)
	}
	if resp, _ := a.do("DELETE", "/v1/processes/"+p.ID, nil); resp.StatusCode != 204 {
		t.Fatalf("delete = %d", resp.StatusCode)
	}
	if resp, _ := a.do("GET", "/v1/processes/"+p.ID, nil); resp.StatusCode != 404 {
		t.Errorf("get after delete = %d; want 404", resp.StatusCode)
	}
}

func TestOutputLongPollAndTruncation(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "sleep 0.3; echo late"}})
	start := time.Now()
	resp, body := a.do("GET", "/v1/processes/"+p.ID+"/output?offset=0&wait_ms=10000", nil)
	if string(body) != "late\n" || resp.Header.Get("X-Next-Offset") != "5" {
		t.Fatalf("long poll = %q next=%s; want %q next=5", body, resp.Header.Get("X-Next-Offset"), "late\n")
	}
	if time.Since(start) > 8*time.Second {
		t.Errorf("long poll returned after %v; want on arrival", time.Since(start))
	}
	// A small window: old bytes are gone, and the reader is told.
	q := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "seq 1 1000"}, BufferBytes: 100})
	a.waitExit(q.ID)
	body, h := a.output(q.ID, 0)
	if h.Get("X-Truncated") != "true" || len(body) != 100 || !strings.HasSuffix(string(body), "1000\n") {
		t.Errorf("truncated read = %d bytes %v; want the last 100 bytes flagged truncated", len(body), h)
	}
	if off, _ := strconv.Atoi(h.Get("X-Offset")); off != 3893-100 {
		t.Errorf("X-Offset = %d; want %d", off, 3893-100)
	}
}

// wsConn dials the connect route.
func wsConn(t *testing.T, a *api, ref string, offset int64) *websocket.Conn {
	t.Helper()
	url := strings.Replace(a.d.URL, "http://", "ws://", 1) + "/v1/processes/" + ref + "/connect"
	if offset >= 0 {
		url += "?offset=" + strconv.FormatInt(offset, 10)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: a.d.HTTP})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// session collects a connection's output and notices.
type session struct {
	t    *testing.T
	c    *websocket.Conn
	out  bytes.Buffer
	exit *sandboxapi.ControlFrame
	text []sandboxapi.ControlFrame
}

// readUntil reads frames until cond holds or the timeout passes.
func (s *session) readUntil(timeout time.Duration, cond func() bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		typ, data, err := s.c.Read(ctx)
		if err != nil {
			s.t.Fatalf("read: %v (output so far %q)", err, s.out.String())
		}
		if typ == websocket.MessageBinary {
			if len(data) == 0 || (data[0] != 1 && data[0] != 2) {
				s.t.Fatalf("binary frame without a stream id: %q", data)
			}
			s.out.Write(data[1:])
			continue
		}
		var f sandboxapi.ControlFrame
		if err := json.Unmarshal(data, &f); err != nil {
			s.t.Fatalf("text frame %q: %v", data, err)
		}
		s.text = append(s.text, f)
		if f.Type == "exit" {
			s.exit = &f
		}
	}
}

func (s *session) contains(sub string) func() bool {
	return func() bool { return strings.Contains(s.out.String(), sub) }
}

func (s *session) send(text string) {
	s.t.Helper()
	if err := s.c.Write(context.Background(), websocket.MessageBinary, []byte(text)); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) control(js string) {
	s.t.Helper()
	if err := s.c.Write(context.Background(), websocket.MessageText, []byte(js)); err != nil {
		s.t.Fatal(err)
	}
}

func TestPTYBehaviour(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "bash", Args: []string{"--norc", "--noprofile", "-i"},
		PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}, Env: map[string]string{"PS1": "$ "}})
	s := &session{t: t, c: wsConn(t, a, p.ID, -1)}

	s.send("stty size\n")
	s.readUntil(10*time.Second, s.contains("24 80"))

	// Resize over the socket and over REST; stty sees both.
	s.control(`{"type":"resize","rows":40,"cols":100}`)
	s.send("stty size\n")
	s.readUntil(10*time.Second, s.contains("40 100"))
	if resp, _ := a.do("POST", "/v1/processes/"+p.ID+"/resize", `{"rows":50,"cols":132}`); resp.StatusCode != 204 {
		t.Fatalf("resize = %d", resp.StatusCode)
	}
	s.send("stty size\n")
	s.readUntil(10*time.Second, s.contains("50 132"))

	// Ctrl-C reaches the foreground job, not the shell.
	s.send("sleep 100; echo after-sleep-$?\n")
	time.Sleep(300 * time.Millisecond)
	s.send("\x03")
	s.send("echo alive\n")
	s.readUntil(10*time.Second, s.contains("alive"))
	if strings.Contains(s.out.String(), "after-sleep-0") {
		t.Errorf("sleep was not interrupted: %q", s.out.String())
	}
	// The signal control frame also reaches the foreground job.
	s.send("sleep 100\n")
	time.Sleep(300 * time.Millisecond)
	s.control(`{"type":"signal","signal":"SIGINT"}`)
	s.send("echo still-here\n")
	s.readUntil(10*time.Second, s.contains("still-here"))

	// A bad control frame is answered, and the connection stays usable.
	s.control(`{"type":"resize","rows":-1}`)
	s.readUntil(10*time.Second, func() bool {
		return len(s.text) > 0 && s.text[len(s.text)-1].Type == "error"
	})
	s.send("exit 5\n")
	s.readUntil(10*time.Second, func() bool { return s.exit != nil })
	if s.exit.ExitCode == nil || *s.exit.ExitCode != 5 {
		t.Errorf("exit frame = %+v; want exit_code 5", s.exit)
	}
}

func TestPTYFullScreenPrograms(t *testing.T) {
	a := newAPI(t)
	t.Run("top", func(t *testing.T) {
		p := a.spawn(sandboxapi.SpawnRequest{Command: "top", PTY: &sandboxapi.PTYSize{Rows: 30, Cols: 100}})
		s := &session{t: t, c: wsConn(t, a, p.ID, -1)}
		s.readUntil(15*time.Second, func() bool {
			o := s.out.String()
			return strings.Contains(o, "load average") && strings.Contains(o, "\x1b[")
		})
		s.send("q")
		s.readUntil(10*time.Second, func() bool { return s.exit != nil })
	})
	t.Run("vim", func(t *testing.T) {
		path := t.TempDir() + "/note.txt"
		p := a.spawn(sandboxapi.SpawnRequest{Command: "vim", Args: []string{"-u", "NONE", "-N", path},
			PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
		s := &session{t: t, c: wsConn(t, a, p.ID, -1)}
		s.readUntil(15*time.Second, s.contains("\x1b[")) // it drew the screen
		s.send("ihello from vim\x1b:wq\r")
		s.readUntil(15*time.Second, func() bool { return s.exit != nil })
		resp, body := a.do("POST", "/v1/exec", sandboxapi.ExecRequest{Command: "cat", Args: []string{path}})
		if resp.StatusCode != 200 || !strings.Contains(string(body), "hello from vim") {
			t.Errorf("file written by vim: %s", body)
		}
	})
}

// TestReconnectWithoutLoss drops the connection while the process keeps
// writing, reconnects from the last offset seen, and compares the bytes
// received with the whole output, byte for byte.
func TestReconnectWithoutLoss(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c",
		"i=0; while [ $i -lt 3000 ]; do i=$((i+1)); echo line-$i; [ $((i % 300)) -eq 0 ] && sleep 0.05; done; echo err-tail >&2"}})
	var got bytes.Buffer
	var offset int64
	for round := 0; ; round++ {
		c := wsConn(t, a, p.ID, offset)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		exited := false
		for frames := 0; round >= 3 || frames < 40; frames++ {
			typ, data, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if typ == websocket.MessageText {
				var f sandboxapi.ControlFrame
				_ = json.Unmarshal(data, &f)
				if f.Type == "truncated" {
					t.Fatalf("lost output at offset %d (window is 1 MiB)", f.From)
				}
				if f.Type == "exit" {
					exited = true
					break
				}
				continue
			}
			got.Write(data[1:])
			offset += int64(len(data) - 1)
		}
		cancel()
		c.CloseNow() // an abrupt drop, not a clean close
		if exited {
			break
		}
		time.Sleep(30 * time.Millisecond) // the process writes on while we are away
	}
	all, _ := a.output(p.ID, 0)
	if !bytes.Equal(got.Bytes(), all) {
		t.Fatalf("reassembled %d bytes differ from the %d the process wrote", got.Len(), len(all))
	}
	if !strings.Contains(got.String(), "line-3000\n") || !strings.HasSuffix(got.String(), "err-tail\n") {
		t.Errorf("output is missing its end: ...%q", got.String()[max(0, got.Len()-40):])
	}
}

func TestBinaryAndInvalidUTF8Output(t *testing.T) {
	a := newAPI(t)
	want := []byte{0xff, 0xfe, 0x00, 'a', 0xc3, 0x28, '\n', 0x80}
	p := a.spawn(sandboxapi.SpawnRequest{Command: "printf", Args: []string{`\377\376\000a\303(\n\200`}})
	a.waitExit(p.ID)
	body, _ := a.output(p.ID, 0)
	if !bytes.Equal(body, want) {
		t.Errorf("REST output = %x; want %x", body, want)
	}
	s := &session{t: t, c: wsConn(t, a, p.ID, 0)}
	s.readUntil(10*time.Second, func() bool { return s.exit != nil })
	if !bytes.Equal(s.out.Bytes(), want) {
		t.Errorf("WebSocket output = %x; want %x", s.out.Bytes(), want)
	}
	// Exec streaming carries invalid UTF-8 as base64.
	resp, sse := a.do("POST", "/v1/exec", sandboxapi.ExecRequest{Command: "printf", Args: []string{`\377\376`}}, "Accept", "text/event-stream")
	if resp.StatusCode != 200 || !strings.Contains(string(sse), `"data_base64":"//4="`) {
		t.Errorf("exec stream = %d %s; want base64 data", resp.StatusCode, sse)
	}
}

func TestTenMiBSingleLine(t *testing.T) {
	a := newAPI(t)
	const n = 10 << 20
	p := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo", n)}, BufferBytes: 16 << 20})
	s := &session{t: t, c: wsConn(t, a, p.ID, 0)}
	s.readUntil(30*time.Second, func() bool { return s.exit != nil })
	if s.out.Len() != n+1 || bytes.Count(s.out.Bytes(), []byte("a")) != n {
		t.Fatalf("got %d bytes; want %d a's and a newline", s.out.Len(), n)
	}
	body, _ := a.output(p.ID, 0)
	if len(body) != n+1 {
		t.Errorf("REST output = %d bytes; want %d", len(body), n+1)
	}
}

// TestSlowClientDoesNotBlock connects a client that never reads while the
// process writes far more than its window: the process still finishes, a
// second client still gets the tail, and the stalled one is told what it lost.
func TestSlowClientDoesNotBlock(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "sleep 0.3; head -c 8000000 /dev/zero"}, BufferBytes: 64 << 10})
	stalled := wsConn(t, a, p.ID, 0) // never read until the end
	ex := a.waitExit(p.ID)
	if ex.OutputBytes != 8000000 {
		t.Fatalf("output_bytes = %d; want 8000000", ex.OutputBytes)
	}
	s := &session{t: t, c: stalled}
	s.readUntil(20*time.Second, func() bool { return s.exit != nil })
	var lost bool
	for _, f := range s.text {
		lost = lost || (f.Type == "truncated" && f.From > 0)
	}
	if !lost {
		t.Errorf("a client that fell behind the window got no truncated notice")
	}
	fresh := &session{t: t, c: wsConn(t, a, p.ID, -1)}
	fresh.readUntil(10*time.Second, func() bool { return fresh.exit != nil })
	if fresh.out.Len() != 64<<10 {
		t.Errorf("fresh client got %d bytes; want the %d-byte window", fresh.out.Len(), 64<<10)
	}
}

func TestManyClientsSeeSameOutput(t *testing.T) {
	a := newAPI(t)
	p := a.spawn(sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", "sleep 0.2; seq 1 20000"}})
	var sessions []*session
	for i := 0; i < 8; i++ {
		sessions = append(sessions, &session{t: t, c: wsConn(t, a, p.ID, 0)})
	}
	for _, s := range sessions {
		s.readUntil(20*time.Second, func() bool { return s.exit != nil })
	}
	for i, s := range sessions[1:] {
		if !bytes.Equal(s.out.Bytes(), sessions[0].out.Bytes()) {
			t.Errorf("client %d got %d bytes, client 0 got %d", i+1, s.out.Len(), sessions[0].out.Len())
		}
	}
}

func TestExecRoutes(t *testing.T) {
	a := newAPI(t)
	resp, body := a.do("POST", "/v1/exec", `{"command":"echo hi; echo oops >&2; exit 4","shell":true}`)
	var res sandboxapi.ExecResult
	if err := json.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("exec = %d %s", resp.StatusCode, body)
	}
	if res.ExitCode == nil || *res.ExitCode != 4 || res.Stdout != "hi\n" || res.Stderr != "oops\n" || res.TimedOut {
		t.Errorf("exec result = %+v", res)
	}
	start := time.Now()
	_, body = a.do("POST", "/v1/exec", `{"command":"echo part; sleep 30","shell":true,"timeout_ms":300}`)
	_ = json.Unmarshal(body, &res)
	if !res.TimedOut || res.Stdout != "part\n" || res.ExitCode != nil || res.Signal == nil || time.Since(start) > 10*time.Second {
		t.Errorf("timed-out exec = %s after %v", body, time.Since(start))
	}

	// Streaming: events arrive as they happen, then exit.
	req, _ := http.NewRequest("POST", a.d.URL+"/v1/exec", strings.NewReader(`{"command":"echo one; sleep 0.2; echo two >&2; exit 2","shell":true}`))
	req.Header.Set("Accept", "text/event-stream")
	sresp, err := a.d.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	if ct := sresp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(sresp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			events = append(events, name+" "+strings.TrimPrefix(line, "data: "))
		}
	}
	want := []string{`stdout {"data":"one\n"}`, `stderr {"data":"two\n"}`}
	if len(events) != 3 || events[0] != want[0] || events[1] != want[1] || !strings.HasPrefix(events[2], `exit {"exit_code":2,`) {
		t.Errorf("stream events = %q; want %q then exit 2", events, want)
	}
}

func TestEventsSSEResume(t *testing.T) {
	a := newAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.d.URL+"/v1/events", nil)
	resp, err := a.d.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := a.spawn(sandboxapi.SpawnRequest{Command: "true"})
	a.waitExit(p.ID)
	sc := bufio.NewScanner(resp.Body)
	var ids, types []string
	for len(types) < 2 && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, v)
		}
	}
	if strings.Join(types, ",") != "process.created,process.exited" {
		t.Fatalf("events = %v; want created, exited", types)
	}
	cancel()
	// Resume after the first event: only the second comes back.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	req, _ = http.NewRequestWithContext(ctx2, "GET", a.d.URL+"/v1/events", nil)
	req.Header.Set("Last-Event-ID", ids[0])
	resp2, err := a.d.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	sc = bufio.NewScanner(resp2.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			if v != ids[1] {
				t.Errorf("first resumed id = %s; want %s", v, ids[1])
			}
			break
		}
	}
}
