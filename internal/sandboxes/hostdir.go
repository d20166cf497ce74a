package sandboxes

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// HostDir returns the host directory that is mounted at /run/corral in
// the tenant's sandbox id: the directory of its sandboxd socket. The
// control plane puts sockets there that processes in the sandbox reach
// through sandboxd's forwards (/v1/forwards), such as the model gateway of
// the agent CLIs; it works with network "none".
//
// Errors: those of Dial, and ErrUnprocessable for a sandbox whose daemon
// is not behind a unix socket on this host (a remote runtime). It does
// not count as activity.
func (s *Service) HostDir(ctx context.Context, tenantID, id string) (string, error) {
	c, err := s.lookup(ctx, tenantID, id)
	if err != nil {
		return "", err
	}
	path, ok := strings.CutPrefix(c.endpoint, "unix:")
	path = "/" + strings.TrimLeft(path, "/")
	if !ok || path == "/" {
		return "", errdefs.Unprocessablef("sandbox %s has no socket directory on this host (its daemon is at %s)", id, c.endpoint)
	}
	return filepath.Dir(filepath.Clean(path)), nil
}
