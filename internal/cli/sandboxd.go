package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/sandboxd"
)

func sandboxdCmd() *cobra.Command {
	var (
		listen, root, tokenFile, logLevel string
		grace                             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sandboxd",
		Short: "Run the sandbox daemon (processes, terminals, files over HTTP)",
		Long: `sandboxd is the daemon inside every Corral sandbox. It serves processes,
PTYs, exec and files over HTTP, WebSocket and SSE (DESIGN.md §2).

The token comes from --token-file or the CORRAL_SANDBOX_TOKEN variable; with
neither, requests are not authenticated (only sensible on a private socket).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			slog.SetDefault(log)
			token := os.Getenv("CORRAL_SANDBOX_TOKEN")
			os.Unsetenv("CORRAL_SANDBOX_TOKEN") // never inherited by processes
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("read token file: %w", err)
				}
				token = strings.TrimSpace(string(b))
			}
			return sandboxd.Run(cmd.Context(), sandboxd.RunConfig{
				Listen: listen,
				Config: sandboxd.Config{Root: root, Token: token, KillGrace: grace, Logger: log},
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "unix:/run/corral/sandboxd.sock", `where to listen: "unix:/path.sock" or "127.0.0.1:PORT"`)
	f.StringVar(&root, "root", "/", "directory the files API is confined to")
	f.StringVar(&tokenFile, "token-file", "", "file holding the bearer token")
	f.DurationVar(&grace, "kill-grace", 5*time.Second, "time between SIGTERM and SIGKILL when stopping a process")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}
