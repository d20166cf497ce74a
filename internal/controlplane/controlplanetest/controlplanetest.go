// Package controlplanetest starts a real control plane for tests: a real
// store (SQLite in a temp dir, or PostgreSQL), the real bwrap runtime with
// the minimal template, real sandboxes, served on 127.0.0.1.
package controlplanetest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/auth"
	"github.com/corral-sh/corral/internal/controlplane"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/llm/registry"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/template"
	"github.com/corral-sh/corral/internal/testenv"
)

// Server is a running control plane.
type Server struct {
	URL      string // "http://127.0.0.1:port"
	Token    string // the admin token
	Template string // the template every test should ask for
	DataDir  string
	Config   controlplane.Config
	srv      *controlplane.Server
	stop     func()
}

// Options tune Start.
type Options struct {
	// Database is a store URL; SQLite in a temp dir when "".
	Database string
	// Runtime is the backend; "bwrap" (the fastest) when "".
	Runtime string
	// DataDir and StateRoot are reused when set (to restart a server over
	// the same state); fresh temp dirs when "".
	DataDir, StateRoot string
	// Token is the admin token; a fixed test token when "".
	Token string
	// WorkerID names the server in job claims; derived from DataDir when "".
	WorkerID string
	// RateLimit is the per-tenant request rate; the server's default when 0.
	RateLimit float64
	// TenantLimits are given to tenants as they are created.
	TenantLimits auth.TenantLimits
	// LLM configures the built-in agent's providers (point them at an
	// internal/llm/llmtest server); none when zero.
	LLM registry.Config
	// Forge points pull requests at a forge (internal/forge/forgetest).
	Forge forge.Config
	// Template is the template Start prepares (building it on first
	// use) and reports as Server.Template; "minimal" when "".
	Template string
}

// Start starts a control plane and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Runtime == "" {
		opts.Runtime = "bwrap"
	}
	if opts.Token == "" {
		opts.Token = "crl_test_admin_token_0123456789"
	}
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.StateRoot == "" {
		opts.StateRoot = StateRoot(t)
	}
	cfg := controlplane.Config{
		Listen:       "127.0.0.1:0",
		DataDir:      opts.DataDir,
		Database:     opts.Database,
		Runtime:      opts.Runtime,
		StateRoot:    opts.StateRoot,
		Binary:       runtimetest.Binary(t),
		AdminToken:   opts.Token,
		ConfigPath:   filepath.Join(opts.DataDir, "cli-config.json"),
		Workers:      4,
		WorkerID:     opts.WorkerID,
		RateLimit:    opts.RateLimit,
		TenantLimits: opts.TenantLimits,
		LLM:          opts.LLM,
		Forge:        opts.Forge,
		Out:          io.Discard,
		Log:          slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	tpl := PrepareTemplate(t, opts.Runtime, opts.StateRoot, opts.Template)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv, err := controlplane.New(ctx, cfg)
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	ln, err := controlplane.Listen(cfg.Listen)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(rctx, ln) }()
	s := &Server{URL: "http://" + ln.Addr().String(), Token: opts.Token, Template: tpl, DataDir: opts.DataDir, Config: cfg, srv: srv}
	s.Config.StateRoot = opts.StateRoot
	s.stop = func() {
		rcancel()
		if err := <-done; err != nil {
			t.Errorf("control plane Run: %v", err)
		}
		srv.Close()
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server (idempotent): a clean shutdown, not a crash.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Handler is the server's HTTP handler, for tests that validate it.
func (s *Server) Handler() *controlplane.Server { return s.srv }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// StateRoot returns a fresh runtime state root that bwrap sandboxes
// (uid 1000) can reach, removed when the test ends.
func StateRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "corral-cp-test-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() {
		deleteSandboxes(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// deleteSandboxes removes every sandbox whose host state lives under
// stateRoot. Sandboxes outlive the servers that made them (by design), so
// without this a test would leave their processes running once its state
// directory is gone. Only the ids found under stateRoot are touched, never
// another test's.
func deleteSandboxes(t testing.TB, stateRoot string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"bwrap", "docker", "containerd"} {
		entries, err := os.ReadDir(filepath.Join(stateRoot, name))
		if err != nil || len(entries) == 0 {
			continue
		}
		rt, err := catalog.Open(ctx, name, catalog.Config{Binary: runtimetest.Binary(t), StateRoot: stateRoot})
		if err != nil {
			t.Logf("cleanup: runtime %s: %v", name, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "sb_") {
				if err := rt.Delete(ctx, e.Name()); err != nil {
					t.Logf("cleanup: delete sandbox %s: %v", e.Name(), err)
				}
			}
		}
		_ = catalog.Close(rt)
	}
}

// Prepare makes sure backend name, over stateRoot, has the minimal
// template (built on first use) before a server opens it, and returns the
// template's ref.
func Prepare(t testing.TB, name, stateRoot string) string {
	t.Helper()
	return PrepareTemplate(t, name, stateRoot, "minimal")
}

// PrepareTemplate is Prepare for template tpl ("minimal" when "").
func PrepareTemplate(t testing.TB, name, stateRoot, tpl string) string {
	t.Helper()
	if tpl == "" {
		tpl = "minimal"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rt, err := catalog.Open(ctx, name, catalog.Config{Binary: runtimetest.Binary(t), StateRoot: stateRoot})
	if err != nil {
		testenv.Unavailable(t, "runtime %s: %v", name, err)
	}
	defer catalog.Close(rt)
	imp, ok := rt.(template.Importer)
	if !ok {
		t.Fatalf("runtime %s cannot hold templates", name)
	}
	return runtimetest.NamedTemplate(t, imp, tpl)
}
