package sandboxd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd/ports"
	"github.com/corral-sh/corral/internal/sandboxd/sysinfo"
	"github.com/corral-sh/corral/internal/version"
)

// systemAPI serves health, info, the port list and the port proxy.
//
// The proxy's upstream connections live in one Transport owned by the
// Server: when shutdown begins (Server.stopping closes) idle connections
// are closed, no connection is kept for reuse afterwards, and proxied
// streams and WebSockets are cancelled, so nothing outlives the Server.
type systemAPI struct {
	s         *Server
	probe     sysinfo.Probe
	transport *http.Transport
	rp        *httputil.ReverseProxy
}

func newSystemAPI(s *Server) *systemAPI {
	a := &systemAPI{s: s}
	a.transport = &http.Transport{
		Proxy: nil, // the upstream is always 127.0.0.1; never an HTTP(S)_PROXY
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// Pass the client's Accept-Encoding through untouched instead of
		// asking for gzip and decompressing on the way.
		DisableCompression: true,
	}
	a.rp = &httputil.ReverseProxy{
		Rewrite:       a.rewrite,
		Transport:     a.transport,
		FlushInterval: -1, // flush every write: SSE and streamed bodies flow
		ErrorHandler:  a.proxyError,
	}
	go func() {
		<-s.stopping
		a.transport.CloseIdleConnections()
	}()
	return a
}

// health answers GET /v1/health.
func (a *systemAPI) health(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, sandboxapi.Health{
		Status:   "ok",
		Version:  version.String(),
		UptimeMS: time.Since(a.s.started).Milliseconds(),
	})
	return nil
}

// info answers GET /v1/info. Each number is best-effort: one that cannot
// be read is logged and reported as 0 rather than failing the request.
func (a *systemAPI) info(w http.ResponseWriter, r *http.Request) error {
	info := sandboxapi.Info{
		CPUs:      a.probe.CPUs(),
		Processes: a.s.procs.Running(),
		Version:   version.String(),
	}
	info.Hostname, _ = os.Hostname()
	if mem, err := a.probe.Memory(); err != nil {
		a.s.log.Warn("info: memory unreadable", "err", err)
	} else {
		info.MemoryLimitBytes, info.MemoryUsedBytes = mem.Limit, mem.Used
	}
	if disk, err := sysinfo.DiskOf(a.s.cfg.Root); err != nil {
		a.s.log.Warn("info: disk unreadable", "root", a.s.cfg.Root, "err", err)
	} else {
		info.DiskTotalBytes, info.DiskFreeBytes = disk.Total, disk.Free
	}
	httpjson.Write(w, http.StatusOK, info)
	return nil
}

// ports answers GET /v1/ports: every listening TCP socket, sorted by port.
func (a *systemAPI) ports(w http.ResponseWriter, r *http.Request) error {
	lns, err := ports.List("")
	if err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "the socket table cannot be read")
	}
	list := sandboxapi.PortList{Ports: make([]sandboxapi.Port, 0, len(lns))}
	for _, l := range lns {
		list.Ports = append(list.Ports, sandboxapi.Port{
			Port:    int(l.Addr.Port()),
			Address: l.Addr.Addr().String(),
			PID:     l.PID,
			Command: l.Command,
		})
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

// proxy serves ANY /v1/ports/{port}/proxy/{path...}: a reverse proxy, HTTP
// and WebSocket alike, to 127.0.0.1:port. It stops a proxied stream when
// the daemon shuts down. Errors from the upstream are written by
// proxyError; once the upstream answered, nothing is returned here.
func (a *systemAPI) proxy(w http.ResponseWriter, r *http.Request) error {
	if _, err := proxyPort(r); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-a.s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := httpmw.PrepareProxyBody(w, r); err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, err, "reading the request body failed")
	}
	a.rp.ServeHTTP(w, r.WithContext(ctx))
	return nil
}

// proxyPort returns the {port} of a proxy request, 1..65535.
func proxyPort(r *http.Request) (int, error) {
	raw := r.PathValue("port")
	port, err := strconv.Atoi(raw)
	if err != nil || port < 1 || port > 65535 {
		return 0, errdefs.Invalidf("port %q must be a number from 1 to 65535", raw)
	}
	return port, nil
}

// proxyPrefix is the path the proxy strips for port.
func proxyPrefix(port int) string { return "/v1/ports/" + strconv.Itoa(port) + "/proxy" }

// rewrite turns the inbound request into the upstream one. The daemon's
// credentials (the Authorization header and the access_token parameter)
// are removed; X-Forwarded-For/Host/Proto say who asked and how, keeping
// what an outer proxy (the control plane) already said; X-Forwarded-Prefix
// tells the app the path it is mounted under.
func (a *systemAPI) rewrite(pr *httputil.ProxyRequest) {
	port, _ := proxyPort(pr.In) // validated by proxy
	out := pr.Out
	out.URL.Scheme = "http"
	out.URL.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out.URL.Path, out.URL.RawPath = upstreamPath(pr.In)
	out.URL.RawQuery = httpmw.WithoutQueryParam(pr.In.URL.RawQuery, "access_token")
	// Dev servers (Vite, webpack) refuse unknown Host headers, so the
	// upstream sees its own address; the original is in X-Forwarded-Host.
	out.Host = ""
	out.Header.Del("Authorization")

	xff := pr.In.Header.Values("X-Forwarded-For")
	if len(xff) > 0 {
		out.Header["X-Forwarded-For"] = xff // SetXForwarded appends to it
	}
	pr.SetXForwarded()
	if out.Header.Get("X-Forwarded-For") == "" && len(xff) > 0 {
		// Over a unix socket there is no client IP to append, and
		// SetXForwarded drops the header; keep what the outer proxy said.
		out.Header["X-Forwarded-For"] = xff
	}
	for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v := pr.In.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	if out.Header.Get("X-Forwarded-Prefix") == "" {
		out.Header.Set("X-Forwarded-Prefix", proxyPrefix(port))
	}
	select {
	case <-a.s.stopping:
		out.Close = true // shutting down: keep no connection for reuse
	default:
	}
}

// upstreamPath returns the path after /v1/ports/{port}/proxy, as Path and
// RawPath, so escapes such as %2F reach the upstream as the client sent
// them.
func upstreamPath(r *http.Request) (path, rawPath string) {
	parts := strings.SplitN(r.URL.EscapedPath(), "/", 6) // "", v1, ports, {port}, proxy, rest
	raw := "/"
	if len(parts) == 6 {
		raw += parts[5]
	}
	if p, err := url.PathUnescape(raw); err == nil {
		return p, raw
	}
	return "/" + r.PathValue("path"), ""
}

// proxyError answers when the upstream could not be reached or failed
// before it sent a response: 502 problem+json (504 on a timeout). A client
// that went away gets nothing written and nothing logged as an error.
func (a *systemAPI) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	httpmw.DrainBody(r)
	if r.Context().Err() != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	port, _ := proxyPort(r)
	class, msg := errdefs.ErrBadGateway, fmt.Sprintf("the app on port %d failed to answer", port)
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = fmt.Sprintf("nothing is listening on 127.0.0.1:%d", port)
	case errors.As(err, &ne) && ne.Timeout():
		class, msg = errdefs.ErrTimeout, fmt.Sprintf("the app on port %d timed out", port)
	}
	problem.Write(w, r, errdefs.Wrap(class, err, msg))
}
