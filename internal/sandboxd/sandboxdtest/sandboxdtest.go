// Package sandboxdtest starts a real sandbox daemon for tests: a real
// listener, the real handler chain, real processes and files.
package sandboxdtest

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/sandboxd"
)

// Daemon is a running sandbox daemon.
type Daemon struct {
	// URL is the base URL ("http://127.0.0.1:port"), or "http://sandboxd"
	// for a unix-socket daemon (dial Socket).
	URL string
	// Socket is the unix socket path, empty for TCP.
	Socket string
	Token  string
	Root   string
	Server *sandboxd.Server
	// HTTP is a client that reaches the daemon (over the socket if any) and
	// sends the token.
	HTTP *http.Client
}

// Options tune Start.
type Options struct {
	Config sandboxd.Config // Root defaults to a fresh t.TempDir()
	Unix   bool            // listen on a unix socket instead of 127.0.0.1
}

// Start starts a daemon and stops it when the test ends.
func Start(t testing.TB, opts Options) *Daemon {
	t.Helper()
	cfg := opts.Config
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = 500 * time.Millisecond
	}
	srv, err := sandboxd.New(cfg)
	if err != nil {
		t.Fatalf("sandboxd.New: %v", err)
	}
	d := &Daemon{Token: cfg.Token, Root: cfg.Root, Server: srv}
	addr := "127.0.0.1:0"
	if opts.Unix {
		d.Socket = filepath.Join(t.TempDir(), "sandboxd.sock")
		addr = "unix:" + d.Socket
	}
	ln, err := sandboxd.Listen(addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	if opts.Unix {
		d.URL = "http://sandboxd"
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.Socket)
		}
	} else {
		d.URL = "http://" + ln.Addr().String()
	}
	d.HTTP = &http.Client{Transport: &tokenTransport{base: tr, token: cfg.Token}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		// Idle keep-alive connections first, or the daemon's graceful
		// shutdown waits on them.
		tr.CloseIdleConnections()
		cancel()
		<-done
	})
	return d
}

type tokenTransport struct {
	base  http.RoundTripper
	token string
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// real transport.
func (t *tokenTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(r)
}
