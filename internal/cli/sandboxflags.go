package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/client"
)

// defaultSandboxSocket is where sandboxd listens inside a sandbox.
const defaultSandboxSocket = "/run/corral/sandboxd.sock"

// sandboxFlags are the flags shared by the commands that talk to one
// sandbox daemon directly (attach, exec): where it is and the token.
type sandboxFlags struct {
	socket, url, token string
}

func (f *sandboxFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.socket, "socket", "", "sandboxd unix socket (default "+defaultSandboxSocket+")")
	fs.StringVar(&f.url, "url", "", `sandboxd URL: "http://host:port" or "unix:/path.sock" (env CORRAL_SANDBOX_URL)`)
	fs.StringVar(&f.token, "token", "", "bearer token (env CORRAL_SANDBOX_TOKEN)")
}

// client builds the SDK client the flags, then the environment, describe.
func (f *sandboxFlags) client() (*client.Client, error) {
	if f.socket != "" && f.url != "" {
		return nil, errors.New("use --socket or --url, not both")
	}
	base := f.url
	if f.socket != "" {
		base = "unix:" + f.socket
	}
	if base == "" {
		base = os.Getenv("CORRAL_SANDBOX_URL")
	}
	if base == "" {
		base = "unix:" + defaultSandboxSocket
	}
	token := f.token
	if token == "" {
		token = os.Getenv("CORRAL_SANDBOX_TOKEN")
	}
	return client.New(base, client.WithToken(token))
}

// parseKV reads repeated KEY=VALUE flags into a map (nil when none).
func parseKV(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}
