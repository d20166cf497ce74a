package secrets_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/secrets"
)

func TestKeyFile(t *testing.T) {
	old := syscall.Umask(0) // the file must be 0600 whatever the umask
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data") // not there yet
	k1, err := secrets.LoadKey("", dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, secrets.KeyFile)
	if !k1.Created || k1.Source != path {
		t.Errorf("first LoadKey = created %v, source %q; want created at %s", k1.Created, k1.Source, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode = %#o; want 0600", perm)
	}
	raw, _ := os.ReadFile(path)
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw))); err != nil || len(b) != 32 {
		t.Errorf("key file holds %q: want base64 of 32 bytes", raw)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries after creating the key; want only %s (no temp files)", len(entries), secrets.KeyFile)
	}

	k2, err := secrets.LoadKey("", dir)
	if err != nil || k2.Created || k2.ID() != k1.ID() {
		t.Fatalf("second LoadKey = %v (created %v, id %s); want the same key %s, not created", err, k2 != nil && k2.Created, k2.ID(), k1.ID())
	}

	// A key file others can read is refused, with the fix in the message.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadKey("", dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadKey(mode 0644) = %v; want a refusal saying chmod 600", err)
	}
	_ = os.Chmod(path, 0o600)

	// A damaged key file is an error, never silently replaced.
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadKey("", dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadKey(damaged file) = %v; want an error naming %s", err, path)
	}

	// A directory in its place.
	d2 := t.TempDir()
	if err := os.Mkdir(filepath.Join(d2, secrets.KeyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadKey("", d2); err == nil {
		t.Errorf("LoadKey(key file is a directory) = nil; want an error")
	}
	if _, err := secrets.LoadKey("", ""); err == nil || !strings.Contains(err.Error(), secrets.KeyEnv) {
		t.Errorf("LoadKey(no env, no dir) = %v; want an error naming %s", err, secrets.KeyEnv)
	}
}

// TestKeyFileConcurrent starts several "servers" on one empty data
// directory at once: they all end up with the same key.
func TestKeyFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := secrets.LoadKey("", dir)
			errs[i] = err
			if err == nil {
				ids[i] = k.ID()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("LoadKey #%d = %s, %v; want %s like #0", i, ids[i], errs[i], ids[0])
		}
	}
}

func TestKeyEnv(t *testing.T) {
	dir := t.TempDir()
	raw := []byte("0123456789abcdef0123456789abcdef")
	for _, enc := range []string{
		base64.StdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		"  " + base64.StdEncoding.EncodeToString(raw) + "\n",
	} {
		k, err := secrets.LoadKey(enc, dir)
		if err != nil || k.Source != secrets.KeyEnv || k.Created {
			t.Fatalf("LoadKey(env %q) = %v, %v; want the env key", enc, k, err)
		}
		want, _ := secrets.NewKey(raw)
		if k.ID() != want.ID() {
			t.Errorf("LoadKey(env %q) id %s; want %s", enc, k.ID(), want.ID())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, secrets.KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with %s set, a key file was written (%v)", secrets.KeyEnv, err)
	}
	for _, bad := range []string{
		"definitely-not-base64!!",
		base64.StdEncoding.EncodeToString(raw[:16]), // AES-128 size
		base64.StdEncoding.EncodeToString(append(raw, 'x')),
	} {
		_, err := secrets.LoadKey(bad, dir)
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), secrets.KeyEnv) {
			t.Errorf("LoadKey(env %q) = %v; want ErrInvalid naming %s", bad, err, secrets.KeyEnv)
			continue
		}
		if strings.Contains(err.Error(), bad) {
			t.Errorf("LoadKey(env) error %q shows the value", err)
		}
	}
	if _, err := secrets.NewKey(raw[:31]); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("NewKey(31 bytes) = %v; want ErrInvalid", err)
	}
}
