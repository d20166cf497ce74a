package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

const testToken = "t0ken-for-tests"

// transports are the two ways to reach a daemon; every daemon test runs
// over both.
var transports = []struct {
	name string
	unix bool
}{
	{"tcp", false},
	{"unix", true},
}

// daemon is a real sandboxd and an SDK client for it that goes through a
// dialer the test controls.
type daemon struct {
	*sandboxdtest.Daemon
	c     *client.Client
	dials *dialRecorder
}

// forEachTransport runs f against a fresh token-protected daemon over TCP
// and over a unix socket.
func forEachTransport(t *testing.T, f func(t *testing.T, d *daemon)) {
	t.Helper()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			f(t, startDaemon(t, tr.unix, sandboxd.Config{Token: testToken}))
		})
	}
}

func startDaemon(t *testing.T, unix bool, cfg sandboxd.Config) *daemon {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sd := sandboxdtest.Start(t, sandboxdtest.Options{Unix: unix, Config: cfg})
	d := &daemon{Daemon: sd, dials: &dialRecorder{}}
	network, addr, base := "tcp", strings.TrimPrefix(sd.URL, "http://"), sd.URL
	if unix {
		network, addr, base = "unix", sd.Socket, "unix:"+sd.Socket
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.dials.dial(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	var err error
	d.c, err = client.New(base, client.WithToken(sd.Token), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatalf("client.New(%q): %v", base, err)
	}
	return d
}

// dialRecorder dials and remembers the connections, so a test can cut
// them the way a network would.
type dialRecorder struct {
	mu        sync.Mutex
	conns     []net.Conn
	count     int       // successful dials
	downUntil time.Time // dials fail until then, like an unreachable network
}

func (r *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	down := time.Now().Before(r.downUntil)
	r.mu.Unlock()
	if down {
		return nil, errors.New("test network is down")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns = append(r.conns, conn)
	r.count++
	return conn, nil
}

// cut closes every connection dialed so far, refuses new ones for the
// outage duration, and returns how many it closed.
func (r *dialRecorder) cut(outage time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.conns)
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.downUntil = time.Now().Add(outage)
	return n
}

func (r *dialRecorder) dialed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitExited polls until the process has exited.
func waitExited(ctx context.Context, t *testing.T, c *client.Client, ref string) *sandboxapi.Process {
	t.Helper()
	for {
		p, err := c.GetProcess(ctx, ref)
		if err != nil {
			t.Fatalf("GetProcess(%q): %v", ref, err)
		}
		if p.Status == sandboxapi.StatusExited {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("process %q still %s: %v", ref, p.Status, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		base    string
		wantErr bool
	}{
		{"http://127.0.0.1:8080", false},
		{"http://127.0.0.1:8080/", false},
		{"https://sandbox.example", false},
		{"http://127.0.0.1:7070/v1/sandboxes/sb_1", false},
		{"unix:/run/corral/sandboxd.sock", false},
		{"unix:", true},
		{"127.0.0.1:8080", true},
		{"ftp://host", true},
		{"http://", true},
		{"", true},
	}
	for _, tt := range tests {
		_, err := client.New(tt.base)
		if gotErr := err != nil; gotErr != tt.wantErr {
			t.Errorf("New(%q) error = %v; want error %v", tt.base, err, tt.wantErr)
		}
	}
}

func TestHealth(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		h, err := d.c.Health(testContext(t, 5*time.Second))
		if err != nil {
			t.Fatalf("Health: %v", err)
		}
		if h.Status != "ok" {
			t.Errorf("Health().Status = %q; want %q", h.Status, "ok")
		}
	})
}

// TestPathPrefix checks that a base URL with a path uses it in place of
// /v1, as the control plane's sandbox proxy needs.
func TestPathPrefix(t *testing.T) {
	sd := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Logger: slog.New(slog.DiscardHandler)}})
	mux := http.NewServeMux()
	mux.Handle("/v1/sandboxes/sb_1/", http.StripPrefix("/v1/sandboxes/sb_1", rewriteV1(sd.Server.Handler())))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := client.New("http://" + ln.Addr().String() + "/v1/sandboxes/sb_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(testContext(t, 5*time.Second)); err != nil {
		t.Errorf("Health through a prefix: %v", err)
	}
}

// rewriteV1 puts back the /v1 the proxy stripped along with its prefix.
func rewriteV1(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/v1" + r.URL.Path
		r.URL.RawPath = ""
		h.ServeHTTP(w, r)
	})
}

func TestErrors(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}, Tag: "taken"})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		noToken, err := client.New(d.URL, client.WithHTTPClient(&http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				if d.Socket != "" {
					return (&net.Dialer{}).DialContext(ctx, "unix", d.Socket)
				}
				return (&net.Dialer{}).DialContext(ctx, "tcp", strings.TrimPrefix(d.URL, "http://"))
			},
		}}))
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name       string
			call       func() error
			want       error
			wantStatus int
		}{
			{"unknown ref", func() error { _, err := d.c.GetProcess(ctx, "p_nope"); return err }, client.ErrNotFound, 404},
			{"delete unknown", func() error { return d.c.DeleteProcess(ctx, "nope") }, client.ErrNotFound, 404},
			{"connect unknown", func() error {
				_, err := d.c.Connect(ctx, "nope", client.ConnectOptions{})
				return err
			}, client.ErrNotFound, 404},
			{"tag taken", func() error {
				_, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "true", Tag: "taken"})
				return err
			}, client.ErrConflict, 409},
			{"no command", func() error { _, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{}); return err }, client.ErrInvalid, 400},
			{"no such executable", func() error {
				_, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "/no/such/binary"})
				return err
			}, client.ErrUnprocessable, 422},
			{"resize without pty", func() error { return d.c.Resize(ctx, "taken", 30, 100) }, client.ErrConflict, 409},
			{"input without stdin", func() error { return d.c.WriteInput(ctx, "taken", []byte("x")) }, client.ErrConflict, 409},
			{"no token", func() error { _, err := noToken.Health(ctx); return err }, client.ErrUnauthorized, 401},
			{"no token, events", func() error { _, err := noToken.Events(ctx, ""); return err }, client.ErrUnauthorized, 401},
			{"no token, connect", func() error {
				_, err := noToken.Connect(ctx, "taken", client.ConnectOptions{})
				return err
			}, client.ErrUnauthorized, 401},
		}
		for _, tt := range tests {
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: error = %v; want %v", tt.name, err, tt.want)
				continue
			}
			var ae *client.APIError
			if !errors.As(err, &ae) {
				t.Errorf("%s: error %T is not an *APIError", tt.name, err)
				continue
			}
			if ae.Status != tt.wantStatus {
				t.Errorf("%s: status = %d; want %d", tt.name, ae.Status, tt.wantStatus)
			}
			if ae.Title == "" {
				t.Errorf("%s: APIError.Title is empty", tt.name)
			}
		}
	})
}

// TestAPIErrorBodies checks errors from answers that are not sandboxd's
// own problem+json, as a proxy in between may send.
func TestAPIErrorBodies(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		ctype, body string
		want        error
		wantDetail  string
	}{
		{"problem", 409, "application/problem+json", `{"type":"about:blank","title":"Conflict","status":409,"detail":"tag taken"}`, client.ErrConflict, "tag taken"},
		{"plain text", 502, "text/plain", "upstream down\n", client.ErrServer, "upstream down"},
		{"empty", 404, "", "", client.ErrNotFound, ""},
		{"bad json", 400, "application/problem+json", "{", client.ErrInvalid, ""},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tt.ctype != "" {
				w.Header().Set("Content-Type", tt.ctype)
			}
			w.WriteHeader(tt.status)
			io.WriteString(w, tt.body)
		}))
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetProcess(testContext(t, 5*time.Second), "x")
		srv.Close()
		var ae *client.APIError
		if !errors.Is(err, tt.want) || !errors.As(err, &ae) {
			t.Errorf("%s: error = %v; want an *APIError matching %v", tt.name, err, tt.want)
			continue
		}
		if ae.Status != tt.status || ae.Detail != tt.wantDetail || ae.Title == "" {
			t.Errorf("%s: APIError = %+v; want status %d, detail %q and a title", tt.name, ae, tt.status, tt.wantDetail)
		}
	}
}
