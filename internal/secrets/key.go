package secrets

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// KeyEnv is the environment variable that holds the key, base64 (standard
// or URL alphabet, padded or not) of 32 bytes, e.g. the output of
// `openssl rand -base64 32`. It wins over the key file.
const KeyEnv = "CORRAL_SECRETS_KEY"

// KeyFile is the key file's name in the control plane's data directory.
const KeyFile = "secrets.key"

// KeySize is the size of an AES-256 key.
const KeySize = 32

// Key is the key secrets are sealed with.
type Key struct {
	bytes [KeySize]byte
	// Source says where the key came from: "CORRAL_SECRETS_KEY" or the key
	// file's path.
	Source string
	// Created is true when LoadKey made a new key file just now.
	Created bool
}

// NewKey wraps 32 raw bytes.
func NewKey(b []byte) (*Key, error) {
	if len(b) != KeySize {
		return nil, errdefs.Invalidf("a secrets key must be %d bytes, got %d", KeySize, len(b))
	}
	k := &Key{Source: "memory"}
	copy(k.bytes[:], b)
	return k, nil
}

// ParseKey decodes a base64 key, as in CORRAL_SECRETS_KEY. Its messages
// never contain the text they were given.
func ParseKey(encoded string) (*Key, error) {
	encoded = strings.TrimSpace(encoded)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(encoded); err == nil {
			if len(b) != KeySize {
				return nil, errdefs.Invalidf("a secrets key must be %d bytes, got %d (make one with: openssl rand -base64 32)", KeySize, len(b))
			}
			return NewKey(b)
		}
	}
	return nil, errdefs.Invalidf("a secrets key must be base64 of %d bytes (make one with: openssl rand -base64 32)", KeySize)
}

// ID is a short, public fingerprint of the key (an HMAC of a constant, so
// it says nothing about the key). Sealed values carry it, which is how a
// value sealed with another key is told apart from a tampered one.
func (k *Key) ID() string { return hex.EncodeToString(k.id()) }

func (k *Key) id() []byte {
	m := hmac.New(sha256.New, k.bytes[:])
	m.Write([]byte("corral secrets key id v1"))
	return m.Sum(nil)[:keyIDSize]
}

// LoadKey returns the secrets key: encoded (the value of CORRAL_SECRETS_KEY)
// when it is not empty, else the key file dataDir/secrets.key, created with
// a fresh random key and mode 0600 if it does not exist. A key file that
// others may read (mode & 0077 != 0) is refused rather than used.
// Concurrent first starts on one data directory end up with the same key.
func LoadKey(encoded, dataDir string) (*Key, error) {
	if strings.TrimSpace(encoded) != "" {
		k, err := ParseKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyEnv, err)
		}
		k.Source = KeyEnv
		return k, nil
	}
	if dataDir == "" {
		return nil, errors.New("secrets: no key: set " + KeyEnv + " or give a data directory for " + KeyFile)
	}
	path := filepath.Join(dataDir, KeyFile)
	k, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKeyFile(dataDir, path)
	}
	return k, err
}

func readKeyFile(path string) (*Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secrets: key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secrets: key file %s has mode %#o, readable by others; run: chmod 600 %s", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secrets: key file %s: %w", path, err)
	}
	k.Source = path
	return k, nil
}

// createKeyFile writes a new random key to a temporary file and links it
// into place, so the key file is never seen half written and a concurrent
// creator's key, if it won, is the one used.
func createKeyFile(dir, path string) (*Key, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	var raw [KeySize]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("secrets: random key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".secrets.key-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(raw[:]) + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return readKeyFile(path) // another process made it first
	} else if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable
		d.Close()
	}
	k, _ := NewKey(raw[:])
	k.Source, k.Created = path, true
	return k, nil
}
