package sandboxproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/problem"
)

// unixHost is the Host of requests sent over a unix socket, where there
// is no host name.
const unixHost = "sandboxd"

// upstream is one sandbox's daemon: how to reach it and the reverse proxy
// that does. It is immutable once made.
type upstream struct {
	id        string
	endpoint  string
	token     string
	scheme    string // http or https
	host      string // URL host of upstream requests
	authz     string // "Bearer " + token
	transport *http.Transport
	rp        *httputil.ReverseProxy
}

// newUpstream makes the transport and reverse proxy for a daemon at
// endpoint: "unix:/path/to/sandboxd.sock" or "http(s)://host:port".
func (p *Proxy) newUpstream(id, endpoint, token string) (*upstream, error) {
	up := &upstream{id: id, endpoint: endpoint, token: token, authz: "Bearer " + token}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil, // never an HTTP(S)_PROXY between us and a sandbox
		DialContext:         dialer.DialContext,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// Pass the client's Accept-Encoding through untouched instead of
		// asking for gzip and decompressing on the way.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
		WriteBufferSize:       32 << 10,
		ReadBufferSize:        32 << 10,
	}
	if path, ok := strings.CutPrefix(endpoint, "unix:"); ok {
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return nil, fmt.Errorf("sandbox %s: endpoint %q has no socket path", id, endpoint)
		}
		up.scheme, up.host = "http", unixHost
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", path)
		}
	} else {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("sandbox %s: endpoint %q is not unix:/path or http(s)://host:port", id, endpoint)
		}
		up.scheme, up.host = u.Scheme, u.Host
	}
	up.transport = tr
	up.rp = &httputil.ReverseProxy{
		Rewrite:       up.rewrite,
		Transport:     tr,
		FlushInterval: -1, // flush every write: SSE and streamed bodies flow
		BufferPool:    &p.bufs,
		ErrorHandler:  up.proxyError,
	}
	return up, nil
}

// rewrite turns /v1/sandboxes/{id}/{rest}?{query} into the daemon's
// /v1/{rest}?{query minus access_token}, with the sandbox's token as the
// only credential. Hop-by-hop headers are removed (and an Upgrade kept) by
// ReverseProxy itself.
func (up *upstream) rewrite(pr *httputil.ProxyRequest) {
	_, rest, _ := splitPath(pr.In.URL.EscapedPath()) // checked by ServeHTTP
	out := pr.Out
	out.URL.Scheme, out.URL.Host = up.scheme, up.host
	raw := "/v1/" + rest
	if p, err := url.PathUnescape(raw); err == nil {
		out.URL.Path, out.URL.RawPath = p, raw // %2F and friends reach the daemon as sent
	} else {
		out.URL.Path, out.URL.RawPath = raw, ""
	}
	out.URL.RawQuery = httpmw.WithoutQueryParam(pr.In.URL.RawQuery, "access_token")
	out.Host = ""
	out.Header["Authorization"] = []string{up.authz}
	pr.SetXForwarded()
	if port, ok := portProxy(rest); ok {
		// The daemon's port proxy tells the app where it is mounted; from
		// outside that is under the control plane's prefix.
		out.Header.Set("X-Forwarded-Prefix", Prefix+up.id+"/ports/"+port+"/proxy")
	}
}

// portProxy reports whether rest is a route of the daemon's port proxy,
// ports/{port}/proxy[/...], and its port.
func portProxy(rest string) (port string, ok bool) {
	after, ok := strings.CutPrefix(rest, "ports/")
	if !ok {
		return "", false
	}
	port, after, _ = strings.Cut(after, "/")
	if after != "proxy" && !strings.HasPrefix(after, "proxy/") {
		return "", false
	}
	return port, true
}

// proxyError answers when the daemon could not be reached or failed
// before it answered: 502 problem+json (504 on a timeout). A client that
// went away gets nothing written and nothing logged as an error.
func (up *upstream) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	httpmw.DrainBody(r)
	if r.Context().Err() != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	class, msg := errdefs.ErrBadGateway, fmt.Sprintf("sandbox %s did not answer", up.id)
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		msg = fmt.Sprintf("sandbox %s is not running: its daemon does not accept connections", up.id)
	case errors.As(err, &ne) && ne.Timeout():
		class, msg = errdefs.ErrTimeout, fmt.Sprintf("sandbox %s timed out", up.id)
	}
	problem.Write(w, r, errdefs.Wrap(class, err, msg))
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers, so a request
// does not allocate one.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
