package auth

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/userconfig"
)

var shownRE = regexp.MustCompile(`(?m)^admin token \(shown once\): (crl_[a-z2-7]{40})$`)

func testBootstrapOnce(t *testing.T, db testDB) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "corral", "config.json")
	var out bytes.Buffer
	opts := BootstrapOptions{ServerURL: "http://127.0.0.1:7070", ConfigPath: path, Out: &out}

	created, err := Bootstrap(ctx, db.st, opts)
	must(t, "Bootstrap", err)
	m := shownRE.FindAllStringSubmatch(out.String(), -1)
	if !created || len(m) != 1 {
		t.Fatalf("Bootstrap = %v, printed %q; want true and the token shown once", created, out.String())
	}
	secret := m[0][1]
	tok, err := db.st.TokenByHash(ctx, Hash(secret))
	must(t, "TokenByHash(shown token)", err)
	if tok.TenantID != DefaultTenant || !tok.Admin {
		t.Errorf("stored token = %+v; want an admin token of %q", tok, DefaultTenant)
	}
	tn, err := db.st.GetTenant(ctx, DefaultTenant)
	must(t, "GetTenant(default)", err)
	if tn.Name != DefaultTenant {
		t.Errorf("default tenant is named %q", tn.Name)
	}

	cfg, err := userconfig.Load(path)
	must(t, "Load", err)
	if cfg.URL != opts.ServerURL || cfg.Token != secret {
		t.Errorf("config = %+v; want %s and the shown token", cfg, opts.ServerURL)
	}
	wantMode(t, path, 0o600)

	// A restart: nothing printed, nothing written.
	must(t, "Remove config", os.Remove(path))
	out.Reset()
	created, err = Bootstrap(ctx, db.st, opts)
	must(t, "Bootstrap again", err)
	if created || out.Len() != 0 {
		t.Errorf("second Bootstrap = %v, printed %q; want false and nothing", created, out.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("second Bootstrap wrote the config file (Stat = %v)", err)
	}
	ts, err := db.st.ListTokens(ctx, DefaultTenant)
	must(t, "ListTokens", err)
	if len(ts) != 1 {
		t.Errorf("after two Bootstraps, %d tokens; want 1", len(ts))
	}
}

func testBootstrapEnvToken(t *testing.T, db testDB) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "config.json")
	var out bytes.Buffer
	const env = "automation-token-0123456789"

	_, err := Bootstrap(ctx, db.st, BootstrapOptions{EnvToken: "short", ConfigPath: path, Out: &out})
	wantClass(t, "Bootstrap(short EnvToken)", err, errdefs.ErrInvalid)
	_, err = Bootstrap(ctx, db.st, BootstrapOptions{EnvToken: env + "\n", ConfigPath: path, Out: &out})
	wantClass(t, "Bootstrap(EnvToken with newline)", err, errdefs.ErrInvalid)
	if ts, _ := db.st.ListTenants(ctx); len(ts) != 0 {
		t.Fatalf("a refused Bootstrap created %d tenants", len(ts))
	}

	created, err := Bootstrap(ctx, db.st, BootstrapOptions{EnvToken: env, ServerURL: "http://x", ConfigPath: path, Out: &out})
	must(t, "Bootstrap(EnvToken)", err)
	if !created || strings.Contains(out.String(), env) || strings.Contains(out.String(), "crl_") {
		t.Errorf("Bootstrap(EnvToken) = %v, printed %q; want true, and no token echoed", created, out.String())
	}
	tok, err := db.st.TokenByHash(ctx, Hash(env))
	must(t, "TokenByHash(EnvToken)", err)
	if !tok.Admin || tok.TenantID != DefaultTenant {
		t.Errorf("EnvToken stored as %+v; want an admin token of default", tok)
	}
	if cfg, err := userconfig.Load(path); err != nil || cfg.Token != env {
		t.Errorf("config = %+v, %v; want the EnvToken", cfg, err)
	}
}

func testBootstrapEnvTokenLater(t *testing.T, db testDB) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "config.json")
	var out bytes.Buffer
	_, err := Bootstrap(ctx, db.st, BootstrapOptions{ConfigPath: path, Out: &out})
	must(t, "Bootstrap", err)

	const env = "automation-token-0123456789"
	for i := range 2 { // added once, then known
		out.Reset()
		created, err := Bootstrap(ctx, db.st, BootstrapOptions{EnvToken: env, ConfigPath: path, Out: &out})
		must(t, "Bootstrap(new EnvToken)", err)
		if created || out.Len() != 0 {
			t.Errorf("#%d: Bootstrap(new EnvToken) = %v, printed %q; want false and nothing", i, created, out.String())
		}
	}
	tok, err := db.st.TokenByHash(ctx, Hash(env))
	must(t, "TokenByHash(EnvToken)", err)
	if !tok.Admin || tok.TenantID != DefaultTenant {
		t.Errorf("EnvToken stored as %+v; want an admin token of default", tok)
	}
	ts, err := db.st.ListTokens(ctx, DefaultTenant)
	must(t, "ListTokens", err)
	if len(ts) != 2 {
		t.Errorf("%d tokens; want 2 (first admin, EnvToken)", len(ts))
	}

	must(t, "RevokeToken", db.st.RevokeToken(ctx, DefaultTenant, tok.ID))
	_, err = Bootstrap(ctx, db.st, BootstrapOptions{EnvToken: env, ConfigPath: path, Out: &out})
	wantClass(t, "Bootstrap(revoked EnvToken)", err, errdefs.ErrConflict)
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, "Stat", err)
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %v; want %v", path, got, want)
	}
}
