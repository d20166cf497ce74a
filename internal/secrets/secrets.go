// Package secrets keeps each tenant's named secrets (API keys, repository
// tokens) encrypted at rest, and gives their values to the job engine.
//
// A secret has a name shaped like an environment variable (it becomes one
// in the agent's processes) and a value of at most 64 KiB of UTF-8 text
// without NUL bytes. The API and the CLI can set, list and delete secrets,
// never read them back: only Get and Resolve return values, for the job
// engine, which also registers them with the event log's redactor.
//
// # Encryption
//
// Each value is sealed with AES-256-GCM under a random 96-bit nonce; the
// tenant id and the secret name are additional data, so a ciphertext moved
// to another row (another tenant, another name) fails to open, as does one
// altered in any bit. The store sees only ciphertext (internal/store,
// table secrets).
//
// # The key
//
// The key comes from CORRAL_SECRETS_KEY (base64 of 32 bytes, e.g.
// `openssl rand -base64 32`) or, when that is unset, from the file
// secrets.key in the control plane's data directory, created with a random
// key and mode 0600 on first start (a key file readable by others is
// refused). Several control-plane replicas sharing one PostgreSQL database
// must be given the same key, so set CORRAL_SECRETS_KEY on each.
//
// If the key is lost or changed, the stored secrets cannot be opened: there
// is no recovery and no back door. Every sealed value carries a public
// fingerprint of its key (Key.ID), so Get then fails with ErrWrongKey and a
// message that says exactly that (restore the key, or set the secrets
// again), rather than a generic decryption error; a tampered value fails
// with ErrCorrupt. Both are of class errdefs.ErrUnprocessable. Back up the
// key file with the database.
package secrets

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// MaxValueBytes is the largest secret value.
const MaxValueBytes = 64 << 10

// MaxNameBytes is the longest secret name.
const MaxNameBytes = 128

var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Store is the persistence the Service needs; *store.Store has it.
type Store interface {
	PutSecret(ctx context.Context, sec store.Secret) (*store.Secret, bool, error)
	GetSecret(ctx context.Context, tenantID, name string) (*store.Secret, error)
	ListSecrets(ctx context.Context, tenantID string) ([]*store.Secret, error)
	DeleteSecret(ctx context.Context, tenantID, name string) error
}

// Info describes a secret; it never holds the value.
type Info struct {
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Service is the tenants' secrets over a Store. It is safe for concurrent
// use and holds no goroutine.
type Service struct {
	st  Store
	s   *sealer
	key *Key
}

// New returns a Service sealing with key.
func New(st Store, key *Key) (*Service, error) {
	s, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	return &Service{st: st, s: s, key: key}, nil
}

// KeyID is the public fingerprint of the Service's key.
func (s *Service) KeyID() string { return s.key.ID() }

// CheckName returns an ErrInvalid error unless name is a valid secret
// name: a letter or '_', then letters, digits or '_', 128 at most.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return errdefs.Invalidf("secret name %s is not valid: it must start with a letter or '_' and have only letters, digits and '_', %d at most (like an environment variable)",
			shortQuote(name), MaxNameBytes)
	}
	return nil
}

// checkValue validates a value; its messages never contain it.
func checkValue(value string) error {
	switch {
	case value == "":
		return errdefs.Invalidf("secret value must not be empty")
	case len(value) > MaxValueBytes:
		return errdefs.Invalidf("secret value is %d bytes; the limit is %d", len(value), MaxValueBytes)
	case !utf8.ValidString(value):
		return errdefs.Invalidf("secret value must be valid UTF-8")
	case strings.IndexByte(value, 0) >= 0:
		return errdefs.Invalidf("secret value must not contain NUL bytes (it is given to processes as an environment variable)")
	}
	return nil
}

// shortQuote quotes a name for a message, cut to a readable length.
func shortQuote(name string) string {
	if len(name) > 64 {
		return fmt.Sprintf("%q...", name[:64])
	}
	return fmt.Sprintf("%q", name)
}

// Set creates the tenant's secret name, or replaces its value; created
// tells which. Invalid names and values are ErrInvalid.
func (s *Service) Set(ctx context.Context, tenantID, name, value string) (_ Info, created bool, _ error) {
	if err := CheckName(name); err != nil {
		return Info{}, false, err
	}
	if err := checkValue(value); err != nil {
		return Info{}, false, err
	}
	sealed, err := s.s.seal(tenantID, name, []byte(value))
	if err != nil {
		return Info{}, false, err
	}
	sec, created, err := s.st.PutSecret(ctx, store.Secret{TenantID: tenantID, Name: name, Ciphertext: sealed})
	if err != nil {
		return Info{}, false, err
	}
	return info(sec), created, nil
}

// Get returns the value of the tenant's secret name. A missing secret, or
// another tenant's, is ErrNotFound; one that does not decrypt is
// ErrUnprocessable wrapping ErrWrongKey or ErrCorrupt.
func (s *Service) Get(ctx context.Context, tenantID, name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	sec, err := s.st.GetSecret(ctx, tenantID, name)
	if err != nil {
		return "", err
	}
	plain, err := s.s.open(tenantID, name, sec.Ciphertext)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// Resolve returns the values of the tenant's secrets names, by name, for a
// job about to start. The first one missing or unreadable fails the whole
// call, naming it.
func (s *Service) Resolve(ctx context.Context, tenantID string, names []string) (map[string]string, error) {
	vals := make(map[string]string, len(names))
	for _, n := range names {
		if _, ok := vals[n]; ok {
			continue
		}
		v, err := s.Get(ctx, tenantID, n)
		if err != nil {
			return nil, err
		}
		vals[n] = v
	}
	return vals, nil
}

// List describes the tenant's secrets, by name; never their values.
func (s *Service) List(ctx context.Context, tenantID string) ([]Info, error) {
	secs, err := s.st.ListSecrets(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(secs))
	for _, sec := range secs {
		out = append(out, info(sec))
	}
	return out, nil
}

// Delete removes the tenant's secret name; a missing one, or another
// tenant's, is ErrNotFound.
func (s *Service) Delete(ctx context.Context, tenantID, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	return s.st.DeleteSecret(ctx, tenantID, name)
}

func info(sec *store.Secret) Info {
	return Info{Name: sec.Name, CreatedAt: sec.CreatedAt, UpdatedAt: sec.UpdatedAt}
}
