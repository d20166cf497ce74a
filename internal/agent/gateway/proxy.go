package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"path"
	"strconv"
	"strings"
	"time"
)

// credentialHeaders are dropped from every request: whatever the CLI
// sends (the placeholder, or a key someone put in the sandbox) never
// reaches the provider.
var credentialHeaders = []string{
	"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie",
}

// maxErrorBody bounds an error answer read whole to mask the key in it.
const maxErrorBody = 1 << 20

// minRedactLen is the shortest key searched for in answers: shorter ones
// (test keys) would match ordinary text.
const minRedactLen = 8

// redacted replaces the key wherever an answer quotes it.
const redacted = "[redacted by corral]"

// handler serves one listener: route check, body limit, a concurrency
// slot, then the reverse proxy.
func (g *Gateway) handler(up *upstream, l *Listener, opts ListenOptions) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:        up.rewrite,
		Transport:      g.transport,
		FlushInterval:  -1, // server-sent events reach the CLI as they come
		ModifyResponse: func(resp *http.Response) error { return up.inspect(resp, l, opts) },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the CLI went away, or the listener closed
			}
			g.log.Warn("gateway: upstream failed", "provider", up.name, "label", opts.Label, "path", r.URL.Path, "err", err)
			writeError(w, http.StatusBadGateway, "api_error", "corral gateway: the model API did not answer")
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			g.log.Info("gateway request", "provider", up.name, "label", opts.Label, "method", r.Method,
				"path", r.URL.Path, "status", rec.status, "duration_ms", time.Since(start).Milliseconds())
		}()
		p := r.URL.Path
		if p == "" || path.Clean(p) != p || (r.URL.RawPath != "" && r.URL.RawPath != p) {
			writeError(rec, http.StatusBadRequest, "invalid_request_error", "corral gateway: the path is not canonical")
			return
		}
		if !up.allowed(r.Method, p) {
			writeError(rec, http.StatusForbidden, "permission_error",
				"corral gateway: "+r.Method+" "+p+" is not a model API route this sandbox may call")
			return
		}
		if r.ContentLength > g.cfg.MaxBody {
			writeError(rec, http.StatusRequestEntityTooLarge, "request_too_large", "corral gateway: the request body is too large")
			return
		}
		r.Body = http.MaxBytesReader(rec, r.Body, g.cfg.MaxBody)
		select {
		case l.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-l.slots }()
		rp.ServeHTTP(rec, r)
	})
}

// allowed reports whether method and p (clean) match a route.
func (up *upstream) allowed(method, p string) bool {
	for _, rt := range up.routes {
		if rt.Method != method {
			continue
		}
		if p == rt.Prefix || (strings.HasSuffix(rt.Prefix, "/") && strings.HasPrefix(p, rt.Prefix)) ||
			strings.HasPrefix(p, rt.Prefix+"/") {
			return true
		}
	}
	return false
}

// rewrite points the request at the upstream and swaps the credentials.
func (up *upstream) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(up.base) // BaseURL's path + the request's path
	h := pr.Out.Header
	for _, name := range credentialHeaders {
		h.Del(name)
	}
	if q := pr.Out.URL.Query(); q.Has("key") { // Gemini's ?key=
		q.Del("key")
		pr.Out.URL.RawQuery = q.Encode()
	}
	// Identity encoding, so usage can be read and keys masked on the way.
	h.Del("Accept-Encoding")
	if up.key != "" {
		if up.bearer {
			h.Set(up.header, "Bearer "+up.key)
		} else {
			h.Set(up.header, up.key)
		}
	}
}

// inspect masks the key in an answer and counts the usage it reports.
// Error answers are read whole (bounded) and masked; others pass through
// a usage scanner that does not hold them.
func (up *upstream) inspect(resp *http.Response, l *Listener, opts ListenOptions) error {
	key := up.key
	if len(key) >= minRedactLen {
		for name, vals := range resp.Header {
			for i, v := range vals {
				if strings.Contains(v, key) {
					resp.Header[name][i] = strings.ReplaceAll(v, key, redacted)
				}
			}
		}
	}
	if resp.StatusCode >= 400 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(key) >= minRedactLen {
			b = bytes.ReplaceAll(b, []byte(key), []byte(redacted))
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	ct := resp.Header.Get("Content-Type")
	if strings.Contains(ct, "json") || strings.Contains(ct, "event-stream") {
		resp.Body = newUsageReader(resp.Body, strings.Contains(ct, "event-stream"), func(u usage) {
			lu := u.llm()
			l.addUsage(lu)
			if opts.OnUsage != nil {
				opts.OnUsage(lu)
			}
		})
	}
	return nil
}

// writeError answers with a JSON error every provider's client can read:
// Anthropic's {"type":"error","error":{type,message}}, OpenAI's
// {"error":{message,type}} and Google's {"error":{code,message,status}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "error",
		"error": map[string]any{
			"type": typ, "message": msg, "code": status, "status": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")),
		},
	})
}

// recorder keeps the status for the log line; Unwrap lets the proxy's
// flushes reach the real writer.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
