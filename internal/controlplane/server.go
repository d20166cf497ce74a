// Package controlplane is Corral's orchestration server (`corral up`,
// DESIGN.md §3): the HTTP API over jobs, sandboxes, tokens and event logs,
// the proxy to every sandbox's daemon, and the wiring of the store, the
// event broker, the runtimes, the sandboxes service and the job engine.
//
// Lifetime: New opens everything; Run reconciles sandboxes and jobs left
// by an earlier process, starts the background loops (sandbox expiry, job
// workers and guardian), serves until its context ends, then shuts down
// in reverse order. Handlers hold no state of their own.
package controlplane

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/agent/builtin"
	"github.com/corral-sh/corral/internal/agent/cliagent"
	"github.com/corral-sh/corral/internal/agent/gateway"
	"github.com/corral-sh/corral/internal/auth"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/llm/registry"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxproxy"
	"github.com/corral-sh/corral/internal/secrets"
	"github.com/corral-sh/corral/internal/store"
)

// Config configures the control plane.
type Config struct {
	// Listen is the address to serve on; 127.0.0.1:7070 when empty.
	Listen string
	// DataDir holds the SQLite database and the job artifacts.
	DataDir string
	// Database is a store URL; sqlite:<DataDir>/corral.db when empty.
	Database string
	// Runtime names the default backend; the strongest available when "".
	Runtime string
	// UnsafeLocal allows the local backend (no isolation).
	UnsafeLocal bool
	// StateRoot holds the backends' host state; catalog's default when "".
	StateRoot string
	// Binary is the static corral binary sandboxes run; this one when "".
	Binary string
	// AdminToken (CORRAL_ADMIN_TOKEN) becomes the admin token on first start.
	AdminToken string
	// SecretsKey (CORRAL_SECRETS_KEY) is the base64 key tenant secrets are
	// encrypted with; DataDir/secrets.key (made on first start) when "".
	// Replicas sharing a database need the same key.
	SecretsKey string
	// ConfigPath is where the CLI's credentials are written on first start.
	ConfigPath string
	// Workers is how many jobs this process runs at once.
	Workers int
	// WorkerID names this process in job claims; host name and a hash of
	// DataDir when "", so a restart reclaims its predecessor's jobs.
	WorkerID string
	// PoolSize keeps that many sandboxes warm for the default runtime and
	// PoolTemplate (runtime.DefaultTemplate when ""), no limits, network
	// none: what a plain job or sandbox request gets. 0 disables the pool.
	PoolSize     int
	PoolTemplate string
	// TenantLimits are given to every tenant when it is created (the
	// default tenant on first start; others through token creation).
	TenantLimits auth.TenantLimits
	// RateLimit is each tenant's request rate (per second, burst twice
	// that); 100 when 0, none when negative.
	RateLimit float64
	// LLM configures the model providers of the built-in agent
	// (registry.FromEnv() in corral up). With no provider configured the
	// builtin agent is unavailable and its jobs are refused (422).
	LLM registry.Config
	// Forge opens repository jobs' pull requests (forge.ConfigFromEnv()
	// in corral up: GitHub, GitLab and Codeberg, and the self-hosted
	// instances in CORRAL_GITHUB_API_URL, CORRAL_GITLAB_URL and
	// CORRAL_GITEA_URL).
	Forge forge.Config
	// AgentBudget limits every agent job (model calls, tokens).
	AgentBudget agent.Budget
	// Out receives the one-time admin token line; os.Stderr when nil.
	Out io.Writer
	Log *slog.Logger
}

// Server is a running control plane.
type Server struct {
	cfg      Config
	log      *slog.Logger
	store    *store.Store
	broker   *eventlog.Broker
	auth     *auth.Authenticator
	runtimes map[string]runtime.Runtime
	sbx      *sandboxes.Service
	secrets  *secrets.Service
	pool     *pool.Pool // nil without Config.PoolSize
	jobs     *jobs.Manager
	proxy    http.Handler
	reg      *prometheus.Registry
	metrics  *httpmw.Metrics
	handler  http.Handler
}

// New opens the store, bootstraps the admin token, opens the runtimes and
// builds the services. Close releases what New opened.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:7070"
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Out == nil {
		cfg.Out = os.Stderr
	}
	if cfg.DataDir == "" {
		return nil, errors.New("controlplane: a data directory is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if cfg.Database == "" {
		cfg.Database = "sqlite:" + filepath.Join(cfg.DataDir, "corral.db")
	}
	if cfg.WorkerID == "" {
		// Stable across restarts of the same installation, so a restarted
		// process reclaims the jobs its predecessor held.
		host, _ := os.Hostname()
		sum := sha256.Sum256([]byte(cfg.DataDir))
		cfg.WorkerID = fmt.Sprintf("%s-%x", host, sum[:4])
	}
	s := &Server{cfg: cfg, log: cfg.Log, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = httpmw.NewMetrics(s.reg, "corral")

	if s.store, err = store.Open(ctx, cfg.Database, cfg.Log); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.broker, err = eventlog.New(ctx, s.store, eventlog.Options{Log: cfg.Log}); err != nil {
		return nil, fmt.Errorf("event broker: %w", err)
	}
	rate := cfg.RateLimit
	if rate == 0 {
		rate = 100
	}
	if err := s.openSecrets(); err != nil {
		return nil, err
	}
	s.auth = auth.New(s.store, auth.Options{RatePerSecond: rate, Burst: int(2 * max(rate, 1)), TenantLimits: cfg.TenantLimits, Log: cfg.Log})
	if _, err := auth.Bootstrap(ctx, s.store, auth.BootstrapOptions{
		EnvToken: cfg.AdminToken, ServerURL: "http://" + cfg.Listen, ConfigPath: cfg.ConfigPath, Out: cfg.Out,
		TenantLimits: cfg.TenantLimits,
	}); err != nil {
		return nil, fmt.Errorf("bootstrap admin token: %w", err)
	}
	if err := s.openRuntimes(ctx); err != nil {
		return nil, err
	}
	pools := map[string]*pool.Pool{}
	if cfg.PoolSize > 0 {
		s.pool = pool.New(s.runtimes[s.cfg.Runtime], cfg.PoolSize, cfg.Log)
		pools[s.cfg.Runtime] = s.pool
	}
	s.sbx = sandboxes.New(sandboxes.Options{Store: s.store, Runtimes: s.runtimes, Default: s.cfg.Runtime, Pools: pools, Log: cfg.Log})
	fg, err := forge.New(cfg.Forge)
	if err != nil {
		return nil, fmt.Errorf("forge: %w", err)
	}
	agents, err := s.agents()
	if err != nil {
		return nil, err
	}
	if s.jobs, err = jobs.New(jobs.Options{
		Store: s.store, Broker: s.broker, Sandboxes: jobSandboxes{s.sbx},
		WorkerID: cfg.WorkerID, Workers: cfg.Workers, Agents: agents, AgentBudget: cfg.AgentBudget,
		Secrets: s.secrets, Forge: fg,
		ArtifactsDir: filepath.Join(cfg.DataDir, "artifacts"), Log: cfg.Log,
	}); err != nil {
		return nil, err
	}
	s.proxy = sandboxproxy.New(s.sbx, tenantOf, cfg.Log)
	s.handler = s.routes()
	return s, nil
}

// agents are the LLM agents this control plane can run: the built-in one
// when a provider is configured, and each CLI agent whose provider the
// model gateway can reach (the CLIs in sandboxes reach it through their
// sandbox's socket directory; the keys stay here).
func (s *Server) agents() (map[string]agent.Agent, error) {
	out := map[string]agent.Agent{}
	models := registry.New(s.cfg.LLM)
	if len(models.Available()) > 0 {
		out[cpapi.AgentBuiltin] = builtin.New(builtin.Config{Models: models, ContextWindow: models.ContextWindow})
	}
	gw, err := gateway.New(gateway.Config{Upstreams: upstreams(s.cfg.LLM), Logger: s.log})
	if err != nil {
		return nil, fmt.Errorf("model gateway: %w", err)
	}
	need := map[string][]string{cpapi.AgentClaudeCode: {gateway.Anthropic}, cpapi.AgentCodex: {gateway.OpenAI},
		cpapi.AgentGemini: {gateway.Google}, cpapi.AgentOpenCode: {gateway.Anthropic, gateway.OpenAI}}
	hostDir := func(ctx context.Context, ss *agent.Session) (string, error) {
		return s.sbx.HostDir(ctx, ss.Tenant, ss.SandboxID)
	}
	for _, name := range cliagent.Names() {
		if !slices.ContainsFunc(need[name], gw.Has) {
			continue
		}
		ag, err := cliagent.New(name, cliagent.Config{Gateway: gw, HostDir: hostDir, Logger: s.log})
		if err != nil {
			return nil, err
		}
		out[name] = ag
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	slices.Sort(names)
	s.log.Info("agents", "available", names, "models", models.String())
	return out, nil
}

// upstreams are the model APIs the gateway serves CLI agents, from the
// same configuration as the built-in agent's providers.
func upstreams(c registry.Config) map[string]gateway.Upstream {
	out := map[string]gateway.Upstream{}
	if c.AnthropicKey != "" || c.AnthropicBaseURL != "" {
		out[gateway.Anthropic] = gateway.Upstream{BaseURL: cmp.Or(c.AnthropicBaseURL, "https://api.anthropic.com"), Key: c.AnthropicKey}
	}
	if c.OpenAIKey != "" || c.OpenAIBaseURL != "" {
		out[gateway.OpenAI] = gateway.Upstream{BaseURL: cmp.Or(c.OpenAIBaseURL, "https://api.openai.com/v1"), Key: c.OpenAIKey}
	}
	if c.GeminiKey != "" || c.GeminiBaseURL != "" {
		out[gateway.Google] = gateway.Upstream{BaseURL: cmp.Or(c.GeminiBaseURL, "https://generativelanguage.googleapis.com"), Key: c.GeminiKey}
	}
	return out
}

// openSecrets loads the secrets key and builds the secrets service.
func (s *Server) openSecrets() error {
	key, err := secrets.LoadKey(s.cfg.SecretsKey, s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("secrets key: %w", err)
	}
	if s.secrets, err = secrets.New(s.store, key); err != nil {
		return err
	}
	s.log.Info("secrets key loaded", "source", key.Source, "key_id", key.ID(), "created", key.Created)
	if key.Source != secrets.KeyEnv && s.store.Backend() != "sqlite" {
		s.log.Warn("the secrets key is a file in this data directory: control planes sharing the database must use the same key (set " + secrets.KeyEnv + " on each)")
	}
	return nil
}

// openRuntimes opens every available backend; the default is the one
// named in Config.Runtime or the strongest available.
func (s *Server) openRuntimes(ctx context.Context) error {
	cc := catalog.Config{Binary: s.cfg.Binary, StateRoot: s.cfg.StateRoot, UnsafeLocal: s.cfg.UnsafeLocal}
	s.runtimes = map[string]runtime.Runtime{}
	for _, st := range catalog.Probe(ctx, cc) {
		if !st.Available {
			s.log.Info("runtime unavailable", "runtime", st.Name, "reason", st.Reason)
			continue
		}
		rt, err := catalog.Open(ctx, st.Name, cc)
		if err != nil {
			s.log.Warn("runtime failed to open", "runtime", st.Name, "err", err)
			continue
		}
		s.runtimes[st.Name] = rt
		if s.cfg.Runtime == "" {
			s.cfg.Runtime = st.Name // Probe lists the strongest first
		}
	}
	if len(s.runtimes) == 0 {
		return errors.New("no sandbox runtime is available; see `corral runtime ls`")
	}
	if s.runtimes[s.cfg.Runtime] == nil {
		return fmt.Errorf("runtime %q is not available; see `corral runtime ls`", s.cfg.Runtime)
	}
	s.log.Info("runtimes ready", "default", s.cfg.Runtime, "available", len(s.runtimes))
	return nil
}

// Handler is the whole HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// Run reconciles what an earlier process left, runs the background loops
// and serves ln until ctx ends.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	if rep, err := s.sbx.Reconcile(ctx); ctx.Err() != nil {
		return nil // stopped while starting
	} else if err != nil {
		s.log.Warn("reconciling sandboxes", "err", err)
	} else {
		s.log.Info("sandboxes reconciled", "report", rep)
	}
	if s.pool != nil { // only now: Reconcile deletes sandboxes it has no record of
		tpl := s.cfg.PoolTemplate
		if tpl == "" {
			tpl = runtime.DefaultTemplate
		}
		s.pool.Warm(pool.Key{Template: tpl, Network: runtime.NetworkNone})
	}
	if err := s.jobs.Recover(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("recover jobs: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { s.sbx.Run(gctx); return nil })
	g.Go(func() error { return s.jobs.Run(gctx) })
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return gctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	g.Go(func() error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
		return nil
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Close releases the store, the broker and the runtimes.
func (s *Server) Close() {
	if s.pool != nil {
		s.pool.Close() // deletes the unclaimed sandboxes
	}
	if s.broker != nil {
		s.broker.Close()
	}
	for _, rt := range s.runtimes {
		_ = catalog.Close(rt)
	}
	if s.store != nil {
		s.store.Close()
	}
}

// tenantOf is the caller's tenant, for the sandbox proxy.
func tenantOf(r *http.Request) (string, bool) {
	p, ok := auth.FromContext(r.Context())
	return p.TenantID, ok
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) error {
	promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

// Listen opens the TCP listener for Run.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}
