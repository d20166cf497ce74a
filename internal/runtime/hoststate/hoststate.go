// Package hoststate keeps a sandbox's state on the host: one directory per
// sandbox holding its sandboxd socket directory (mounted into the sandbox
// at /run/corral), its bearer token and its metadata. It survives the
// process that wrote it, so a restarted control plane can find, reach and
// clean up every sandbox. Layout:
//
//	<root>/<id>/            0700, owned by the host user
//	<root>/<id>/sock/       0700, owned by the sandbox user; mounted at /run/corral
//	<root>/<id>/token       0600, sandboxd's bearer token
//	<root>/<id>/meta.json   0600, Meta
package hoststate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// Dir is the root of the state directories of one backend.
type Dir struct{ Root string }

// Meta is what a backend records about a sandbox. Extra holds the
// backend's own fields (a pid, a container id, cgroup paths...).
type Meta struct {
	ID        string            `json:"id"`
	Runtime   string            `json:"runtime"`
	Template  string            `json:"template"`
	Spec      runtime.Spec      `json:"spec"`
	CreatedAt time.Time         `json:"created_at"`
	Extra     map[string]string `json:"extra,omitempty"`
}

// Sandbox is one sandbox's state directory.
type Sandbox struct {
	Path  string
	Meta  Meta
	Token string
}

// SocketDir is the host directory mounted at /run/corral.
func (s *Sandbox) SocketDir() string { return filepath.Join(s.Path, "sock") }

// Socket is the host path of sandboxd's socket.
func (s *Sandbox) Socket() string { return filepath.Join(s.SocketDir(), "sandboxd.sock") }

// Endpoint is the socket as client.New takes it.
func (s *Sandbox) Endpoint() string { return "unix:" + s.Socket() }

// TokenFile is the host path of the token file.
func (s *Sandbox) TokenFile() string { return filepath.Join(s.Path, "token") }

// Runtime returns the runtime.Sandbox view with the given status.
func (s *Sandbox) Runtime(status string) *runtime.Sandbox {
	return &runtime.Sandbox{
		ID: s.Meta.ID, Runtime: s.Meta.Runtime, Template: s.Meta.Template, Status: status,
		Endpoint: s.Endpoint(), Token: s.Token, Labels: s.Meta.Spec.Labels, CreatedAt: s.Meta.CreatedAt,
	}
}

// Create makes the state directory of a new sandbox: a fresh token, the
// socket directory owned by uid:gid (the user sandboxd runs as inside),
// and meta. It fails with ErrConflict if the id exists.
func (d Dir) Create(meta Meta, uid, gid int) (*Sandbox, error) {
	if err := runtime.CheckID(meta.ID); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.Root, 0o711); err != nil {
		return nil, fmt.Errorf("state root %s: %w", d.Root, err)
	}
	p := filepath.Join(d.Root, meta.ID)
	if err := os.Mkdir(p, 0o711); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, errdefs.Conflictf("sandbox %s already exists", meta.ID)
		}
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &Sandbox{Path: p, Meta: meta}
	tok := make([]byte, 24)
	_, _ = rand.Read(tok)
	s.Token = hex.EncodeToString(tok)
	err := os.Mkdir(s.SocketDir(), 0o700)
	if err == nil && os.Geteuid() == 0 {
		err = os.Chown(s.SocketDir(), uid, gid)
	}
	if err == nil {
		err = os.WriteFile(s.TokenFile(), []byte(s.Token), 0o600)
	}
	if err == nil {
		err = s.Save()
	}
	if err != nil {
		os.RemoveAll(p)
		return nil, fmt.Errorf("state dir %s: %w", p, err)
	}
	return s, nil
}

// Save writes meta.json atomically.
func (s *Sandbox) Save() error {
	b, err := json.MarshalIndent(s.Meta, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Path, ".meta.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Path, "meta.json"))
}

// Open reads the state of sandbox id; ErrNotFound if there is none.
func (d Dir) Open(id string) (*Sandbox, error) {
	if err := runtime.CheckID(id); err != nil {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	p := filepath.Join(d.Root, id)
	b, err := os.ReadFile(filepath.Join(p, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errdefs.NotFoundf("no sandbox %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read state of %s: %w", id, err)
	}
	s := &Sandbox{Path: p}
	if err := json.Unmarshal(b, &s.Meta); err != nil {
		return nil, fmt.Errorf("state of %s is corrupt: %w", id, err)
	}
	tok, err := os.ReadFile(s.TokenFile())
	if err != nil {
		return nil, fmt.Errorf("read token of %s: %w", id, err)
	}
	s.Token = strings.TrimSpace(string(tok))
	return s, nil
}

// List returns every sandbox with a readable state directory. Directories
// left half-made by a crash during Create are returned too if their meta
// is readable, so they can be deleted.
func (d Dir) List() ([]*Sandbox, error) {
	entries, err := os.ReadDir(d.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Sandbox
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if s, err := d.Open(e.Name()); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// Remove deletes the state directory of id; a missing one is fine.
func (d Dir) Remove(id string) error {
	if err := runtime.CheckID(id); err != nil {
		return nil
	}
	return os.RemoveAll(filepath.Join(d.Root, id))
}

// WaitHealthy polls sandboxd's /v1/health through the socket until it
// answers or ctx ends. It checks done (nil = never) between tries, so a
// sandbox that died while starting fails fast with done's error.
func WaitHealthy(ctx context.Context, s *Sandbox, done func() error) error {
	c, err := client.New(s.Endpoint(), client.WithToken(s.Token))
	if err != nil {
		return err
	}
	delay := time.Millisecond
	for {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Health(hctx)
		cancel()
		if err == nil {
			return nil
		}
		if done != nil {
			if derr := done(); derr != nil {
				return derr
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandboxd did not become healthy: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// Get returns sandbox id as the runtime reports it, with the status
// alive says it has: for backends whose sandboxes are host processes
// tracked only through their state directories (bwrap, local).
func (d Dir) Get(id string, status func(*Sandbox) string) (*runtime.Sandbox, error) {
	sb, err := d.Open(id)
	if err != nil {
		return nil, err
	}
	return sb.Runtime(status(sb)), nil
}

// Sandboxes lists every sandbox of d as Get reports it.
func (d Dir) Sandboxes(status func(*Sandbox) string) ([]*runtime.Sandbox, error) {
	all, err := d.List()
	if err != nil {
		return nil, err
	}
	out := make([]*runtime.Sandbox, 0, len(all))
	for _, sb := range all {
		out = append(out, sb.Runtime(status(sb)))
	}
	return out, nil
}
