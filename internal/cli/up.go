//go:build !slim

package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/controlplane"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/llm/registry"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/secrets"
	"github.com/corral-sh/corral/internal/userconfig"
)

func upCmd() *cobra.Command {
	var (
		cfg      controlplane.Config
		logLevel string
		model    string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the control plane: jobs, sandboxes and their API",
		Long: `up runs Corral's control plane on --listen (127.0.0.1:7070).

On first start it creates an admin token, prints it once and writes it, with
the server's URL, to the CLI's config file (0600), so the other commands just
work. CORRAL_ADMIN_TOKEN, if set on first start, becomes that token.

Sandboxes come from the strongest runtime available (see 'corral runtime ls')
unless --runtime names one; the store is SQLite in --data-dir unless
--database names a postgres:// URL.

The built-in agent's model providers come from OPENAI_BASE_URL, OPENAI_API_KEY,
ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (a base URL alone is a local server
such as vLLM, Ollama or llama.cpp); a job's model is openai/<name> or
anthropic/<name>, --model (or CORRAL_MODEL) when it names none. Keys are never
logged, never written to events and never given to sandboxes.

Tenant secrets (corral secret) are encrypted with the key in
CORRAL_SECRETS_KEY (base64 of 32 bytes: openssl rand -base64 32) or, when it
is unset, in secrets.key in --data-dir, made on first start. Without that
key the secrets cannot be decrypted: back it up, and give every replica
sharing a database the same CORRAL_SECRETS_KEY. Pull requests go to the
repository's forge: github.com, gitlab.com and codeberg.org as they are;
self-hosted ones at CORRAL_GITHUB_API_URL (GitHub Enterprise),
CORRAL_GITLAB_URL or CORRAL_GITEA_URL (comma-separated lists).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if cfg.Binary, err = runtime.SandboxdBinary(); err != nil {
				return err
			}
			cfg.AdminToken = os.Getenv("CORRAL_ADMIN_TOKEN")
			cfg.SecretsKey = os.Getenv(secrets.KeyEnv)
			os.Unsetenv(secrets.KeyEnv) // no child process needs the key
			llmCfg := registry.FromEnv()
			if model != "" {
				llmCfg.DefaultModel = model
			}
			cfg.LLM = llmCfg
			cfg.Forge = forge.ConfigFromEnv()
			cfg.ConfigPath = userconfig.Path()
			cfg.Log = log
			cfg.Out = cmd.ErrOrStderr()
			ctx := cmd.Context()
			srv, err := controlplane.New(ctx, cfg)
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := controlplane.Listen(cfg.Listen)
			if err != nil {
				return err
			}
			log.Info("corral up", "listen", cfg.Listen, "data_dir", cfg.DataDir)
			return srv.Run(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "address to serve the API on")
	f.StringVar(&cfg.DataDir, "data-dir", defaultDataDir(), "directory for the SQLite store and job artifacts")
	f.StringVar(&cfg.Database, "database", "", "store URL: sqlite:/path or postgres://... (default: SQLite in --data-dir)")
	f.StringVar(&cfg.Runtime, "runtime", "", "default sandbox runtime (default: the strongest available)")
	f.BoolVar(&cfg.UnsafeLocal, "unsafe-local", false, "allow the local runtime, which has NO isolation")
	f.StringVar(&cfg.StateRoot, "state-root", "", "host state of the runtimes (default /var/lib/corral)")
	f.IntVar(&cfg.Workers, "workers", 4, "jobs this process runs at once")
	f.IntVar(&cfg.PoolSize, "pool-size", 2, "sandboxes kept warm for plain requests (0: none)")
	f.StringVar(&cfg.PoolTemplate, "pool-template", "", "template of the warm sandboxes (default "+runtime.DefaultTemplate+")")
	f.Float64Var(&cfg.RateLimit, "rate-limit", 100, "requests per second per tenant (negative: unlimited)")
	f.IntVar(&cfg.TenantLimits.MaxConcurrentJobs, "tenant-max-jobs", 0, "jobs one tenant may run at once, for tenants created from now on (0: unlimited)")
	f.IntVar(&cfg.TenantLimits.MaxSandboxes, "tenant-max-sandboxes", 0, "sandboxes one tenant may hold, for tenants created from now on (0: unlimited)")
	f.StringVar(&model, "model", "", "default model of agent jobs, provider/name (default $CORRAL_MODEL)")
	f.IntVar(&cfg.AgentBudget.MaxSteps, "agent-max-steps", 0, "model calls one agent job may make (0: 200)")
	f.Int64Var(&cfg.AgentBudget.MaxTokens, "agent-max-tokens", 0, "tokens one agent job may use (0: unlimited)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// defaultDataDir is the user's data directory: $XDG_DATA_HOME/corral or
// ~/.local/share/corral.
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "corral")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "corral")
	}
	return fmt.Sprintf("/tmp/corral-%d", os.Getuid())
}
