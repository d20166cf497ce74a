// Package gateway lets agent CLIs inside a sandbox call the model APIs
// without the API keys ever entering the sandbox.
//
// The control plane listens on a unix socket it creates in the sandbox's
// host-side socket directory (mounted at /run/corral inside), one per
// provider: /run/corral/llm-anthropic.sock. sandboxd forwards a
// 127.0.0.1 port inside the sandbox to that socket (POST /v1/forwards),
// and the CLI is told that http://127.0.0.1:<port> is its API's base URL
// and given a placeholder key. The gateway reverse-proxies each request to
// the real provider: whatever credentials the CLI sent (x-api-key,
// Authorization, x-goog-api-key, ?key=) are dropped and the real key is
// set. The key appears in nothing the sandbox can read: not its
// environment, files, or the answers (an error body that quotes the key
// has it masked).
//
// Requests are bounded (body size, concurrent requests per socket) and
// limited to the inference routes of each API (Allowed); answers stream
// through unbuffered (server-sent events flush at once). The token usage
// each answer reports is added up per socket (Listener.Usage), read from
// the stream as it passes, without holding it.
//
// Lifetimes: a Listener serves from Listen until Close, with one goroutine
// for the accept loop plus one per connection (net/http's); Close cuts
// in-flight requests, waits for them, and removes the socket file. The
// Gateway itself holds only configuration and an HTTP transport, shared by
// its listeners.
package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/llm"
)

// Providers the gateway knows.
const (
	Anthropic = "anthropic" // Messages API; key in x-api-key
	OpenAI    = "openai"    // Responses and Chat Completions; Authorization: Bearer
	Google    = "google"    // Gemini API; key in x-goog-api-key
)

// Placeholder is the API key the CLIs are given: the gateway drops it
// (and any other credential) and never forwards it.
const Placeholder = "corral-gateway-placeholder"

// Defaults of Config.
const (
	DefaultMaxBody       = 32 << 20
	DefaultMaxConcurrent = 16
)

// Upstream is a provider's real API.
type Upstream struct {
	// BaseURL is the API root as the provider's SDKs take it:
	// "https://api.anthropic.com", "https://api.openai.com/v1",
	// "https://generativelanguage.googleapis.com". A request for path P
	// on the socket goes to BaseURL + P, so the CLI's base URL is the
	// forward's root (BaseURLFor).
	BaseURL string
	// Key is the real API key; "" sends none (a local model server).
	Key string
	// AuthHeader overrides the header the key goes in ("authorization"
	// sends "Bearer <key>"); the provider's usual header when "".
	AuthHeader string
	// Allowed overrides the routes that may be called (Route.Prefix is
	// relative to BaseURL); the provider's defaults when nil.
	Allowed []Route
}

// Route is an allowed method and path prefix.
type Route struct {
	Method string
	Prefix string
}

// defaultRoutes are the inference routes of each API, relative to the
// usual base URLs, plus the model lists the CLIs read at start.
var defaultRoutes = map[string][]Route{
	Anthropic: {{"POST", "/v1/messages"}, {"GET", "/v1/models"}},
	OpenAI:    {{"POST", "/responses"}, {"POST", "/chat/completions"}, {"GET", "/models"}},
	Google:    {{"POST", "/v1beta/models/"}, {"GET", "/v1beta/models"}, {"POST", "/v1/models/"}, {"GET", "/v1/models"}},
}

// Config configures a Gateway.
type Config struct {
	// Upstreams by provider name (Anthropic, OpenAI, Google).
	Upstreams map[string]Upstream
	// Transport reaches the upstreams; a clone of http.DefaultTransport
	// (proxy from the environment) when nil.
	Transport http.RoundTripper
	// MaxBody caps a request body; DefaultMaxBody when 0.
	MaxBody int64
	// MaxConcurrent caps the requests in flight on one socket (more wait
	// for a slot); DefaultMaxConcurrent when 0.
	MaxConcurrent int
	// Logger receives one line per request; slog.Default() when nil.
	Logger *slog.Logger
}

// Gateway serves the configured providers on sockets. It is safe for
// concurrent use.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	upstreams map[string]*upstream
	transport http.RoundTripper
}

type upstream struct {
	name   string
	base   *url.URL
	key    string
	header string // canonical header name the key goes in
	bearer bool
	routes []Route
}

// New checks cfg and returns a Gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, upstreams: map[string]*upstream{}, transport: cfg.Transport}
	if g.transport == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 10 * time.Minute // a long non-streamed completion
		// Pass the client's Accept-Encoding through instead of
		// decompressing on the way (usage is then read only from
		// uncompressed answers, which is what the CLIs ask for).
		tr.DisableCompression = true
		g.transport = tr
	}
	for name, up := range cfg.Upstreams {
		u, err := url.Parse(up.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("gateway: %s base URL %q: want http(s)://host[/path]", name, up.BaseURL)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawQuery, u.Fragment = "", ""
		x := &upstream{name: name, base: u, key: up.Key, routes: up.Allowed}
		switch name {
		case Anthropic:
			x.header = "X-Api-Key"
		case OpenAI:
			x.header, x.bearer = "Authorization", true
		case Google:
			x.header = "X-Goog-Api-Key"
		default:
			return nil, fmt.Errorf("gateway: unknown provider %q (want %s, %s or %s)", name, Anthropic, OpenAI, Google)
		}
		if up.AuthHeader != "" {
			x.header = http.CanonicalHeaderKey(up.AuthHeader)
			x.bearer = x.header == "Authorization"
		}
		if x.routes == nil {
			x.routes = defaultRoutes[name]
		}
		g.upstreams[name] = x
	}
	return g, nil
}

// Has reports whether provider is configured.
func (g *Gateway) Has(provider string) bool { return g.upstreams[provider] != nil }

// Providers lists the configured providers, sorted.
func (g *Gateway) Providers() []string {
	var out []string
	for name := range g.upstreams {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// SocketName is the file name of provider's socket in a sandbox's socket
// directory: "llm-anthropic.sock".
func SocketName(provider string) string { return "llm-" + provider + ".sock" }

// ListenOptions tune one Listener.
type ListenOptions struct {
	// Label names the listener in logs (a job id).
	Label string
	// OnUsage, if set, is called with the usage of each answer that
	// reported one, from the goroutine serving it.
	OnUsage func(llm.Usage)
}

// Listener serves one provider on one unix socket.
type Listener struct {
	Path     string
	Provider string

	srv   *http.Server
	ln    net.Listener
	done  chan struct{}
	slots chan struct{}

	mu    sync.Mutex
	usage llm.Usage
	calls int64
}

// Listen serves provider on a new unix socket at path, replacing a stale
// file there (a control plane that crashed left it). The socket is made
// connectable by every user (0666): it lives in the sandbox's socket
// directory, which only the sandbox's user and the host can enter, and
// sandboxd there runs as the sandbox's user (uid 1000, unmapped root
// outside a user namespace).
func (g *Gateway) Listen(path, provider string, opts ListenOptions) (*Listener, error) {
	up := g.upstreams[provider]
	if up == nil {
		return nil, fmt.Errorf("gateway: provider %q is not configured", provider)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("gateway: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	l := &Listener{
		Path: path, Provider: provider, ln: ln, done: make(chan struct{}),
		slots: make(chan struct{}, g.cfg.MaxConcurrent),
	}
	l.srv = &http.Server{
		Handler:           g.handler(up, l, opts),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// Usage returns the tokens the answers served so far reported, and the
// number of completions that reported usage.
func (l *Listener) Usage() (llm.Usage, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage, l.calls
}

func (l *Listener) addUsage(u llm.Usage) {
	l.mu.Lock()
	l.usage = l.usage.Add(u)
	l.calls++
	l.mu.Unlock()
}

// Close stops serving: in-flight requests are cut, the socket file is
// removed, and Close returns once the serving goroutines are done.
func (l *Listener) Close() error {
	err := l.srv.Close()
	<-l.done
	if rerr := os.Remove(l.Path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// BaseURLFor is the base URL a CLI inside the sandbox is given for a
// forward on port: the gateway maps paths one to one onto the upstream's
// base URL, so the CLI's base is the forward's root.
func BaseURLFor(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }
