// Package sandboxproxy is the HTTP side of the control plane's sandbox
// routes: every sandboxd route is reachable as
// /v1/sandboxes/{id}/<route>, forwarded to that sandbox's daemon as
// /v1/<route> — plain HTTP, SSE and WebSocket alike (DESIGN.md §3).
//
// For each request the proxy asks the sandboxes service where the caller's
// sandbox is (the service caches that, so the database is not queried per
// request), then forwards the request with the sandbox's own bearer token
// in place of the caller's: the control-plane token never reaches a
// sandbox, in the Authorization header or in ?access_token=. Responses,
// the daemon's problem+json errors included, pass back untouched and
// unbuffered (SSE and large files stream). Errors of the proxy itself
// (unknown sandbox, not running, unreachable) are problem+json.
//
// # Lifetimes and locking
//
// The proxy keeps one upstream per sandbox: an http.Transport (whose
// connections dial the sandbox's unix socket, or its TCP address) and the
// httputil.ReverseProxy using it. It is made on the sandbox's first request
// and dropped, its idle connections closed, when the service deletes the
// sandbox (Service.OnDelete); connections still proxying a stream end when
// the sandbox does. mu guards the upstream map only, never held across
// I/O. The registration with the service lives as long as the service.
package sandboxproxy

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/sandboxes"
)

// Prefix is the path every proxied route hangs under, followed by the
// sandbox id.
const Prefix = "/v1/sandboxes/"

// Proxy forwards requests to sandbox daemons. It is safe for concurrent
// use.
type Proxy struct {
	svc      *sandboxes.Service
	tenantOf func(*http.Request) (string, bool)
	log      *slog.Logger
	bufs     bufferPool

	mu        sync.Mutex
	upstreams map[string]*upstream // by sandbox id
}

// New returns the handler of /v1/sandboxes/{id}/{path...}, any method.
// tenantOf names the caller's tenant (false: not authenticated, 401); it
// is usually the control plane's auth middleware's answer. A nil log is
// slog.Default().
func New(svc *sandboxes.Service, tenantOf func(*http.Request) (string, bool), log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{svc: svc, tenantOf: tenantOf, log: log, upstreams: map[string]*upstream{}}
	svc.OnDelete(p.drop)
	return p
}

// ServeHTTP forwards one request. The sandbox is held (never idle) while
// the request, or the stream or WebSocket it became, is open.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, _, ok := splitPath(r.URL.EscapedPath())
	if !ok {
		problem.Write(w, r, errdefs.NotFoundf("no such route: %s", r.URL.Path))
		return
	}
	tenant, ok := p.tenantOf(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="corral"`)
		problem.Write(w, r, errdefs.Unauthorizedf("a valid bearer token is required"))
		return
	}
	endpoint, token, err := p.svc.Dial(r.Context(), tenant, id)
	if err != nil {
		problem.Write(w, r, err)
		return
	}
	up, err := p.upstream(id, endpoint, token)
	if err != nil {
		problem.Write(w, r, err)
		return
	}
	release := p.svc.Hold(id)
	defer release()
	if err := httpmw.PrepareProxyBody(w, r); err != nil {
		problem.Write(w, r, errdefs.Wrap(errdefs.ErrInvalid, err, "reading the request body failed"))
		return
	}
	up.rp.ServeHTTP(w, r)
}

// splitPath splits an escaped path /v1/sandboxes/{id}/{rest} into the
// (unescaped) id and the still escaped rest. A path that cannot name a
// sandbox is not ok.
func splitPath(escaped string) (id, rest string, ok bool) {
	after, found := strings.CutPrefix(escaped, Prefix)
	if !found {
		return "", "", false
	}
	rawID, rest, found := strings.Cut(after, "/")
	if !found {
		return "", "", false
	}
	id, err := url.PathUnescape(rawID)
	if err != nil || runtime.CheckID(id) != nil {
		return "", "", false
	}
	return id, rest, true
}

// upstream returns the upstream of sandbox id, making it on first use or
// when the sandbox's endpoint or token changed.
func (p *Proxy) upstream(id, endpoint, token string) (*upstream, error) {
	p.mu.Lock()
	up := p.upstreams[id]
	p.mu.Unlock()
	if up != nil && up.endpoint == endpoint && up.token == token {
		return up, nil
	}
	fresh, err := p.newUpstream(id, endpoint, token)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	old := p.upstreams[id]
	if old != nil && old.endpoint == endpoint && old.token == token {
		p.mu.Unlock() // another request made it first
		return old, nil
	}
	p.upstreams[id] = fresh
	p.mu.Unlock()
	if old != nil {
		old.transport.CloseIdleConnections()
	}
	return fresh, nil
}

// drop forgets a deleted sandbox's upstream and closes its idle
// connections.
func (p *Proxy) drop(id string) {
	p.mu.Lock()
	up := p.upstreams[id]
	delete(p.upstreams, id)
	p.mu.Unlock()
	if up != nil {
		up.transport.CloseIdleConnections()
	}
}
