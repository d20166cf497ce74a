package cli

import (
	"errors"
	"os"

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
