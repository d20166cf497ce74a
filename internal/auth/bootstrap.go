package auth

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/userconfig"
)

// DefaultTenant is the tenant Bootstrap creates, id and name alike.
const DefaultTenant = "default"

// BootstrapOptions configures Bootstrap.
type BootstrapOptions struct {
	// EnvToken is $CORRAL_ADMIN_TOKEN: if set, it is (or becomes) an admin
	// token, so automation can use a token it chose, across restarts.
	EnvToken string
	// ServerURL is written to the config file with the token.
	ServerURL string
	// ConfigPath is the CLI's config file; "" means userconfig.Path().
	ConfigPath string
	// Out is where the new admin token is shown; nil discards it.
	Out io.Writer
	// TenantLimits are given to the default tenant when it is created.
	TenantLimits TenantLimits
}

// Bootstrap prepares an empty database on the server's first start: it
// creates the tenant "default" and an admin token for it, shows the token
// once on Out and writes it with ServerURL to the CLI's config file, so that
// the CLI works at once. The token is EnvToken if set (at least 16
// characters; it is not echoed, its owner knows it), else a new one.
//
// On later starts, when any tenant exists, Bootstrap shows nothing and
// writes nothing. The one exception is an EnvToken not stored yet: it is
// added as an admin token of "default". A revoked EnvToken is an error, so
// that revoking it is not silently undone by the next restart.
//
// created reports whether this was a first start. When PostgreSQL
// replicas start together, exactly one of them creates the admin token.
func Bootstrap(ctx context.Context, st *store.Store, opts BootstrapOptions) (created bool, err error) {
	if opts.EnvToken != "" {
		if err := checkChosenSecret(opts.EnvToken); err != nil {
			return false, fmt.Errorf("auth: bootstrap: %w", err)
		}
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	tenants, err := st.ListTenants(ctx)
	if err != nil {
		return false, fmt.Errorf("auth: bootstrap: %w", err)
	}
	if len(tenants) > 0 {
		return false, addEnvToken(ctx, st, opts.EnvToken, opts.TenantLimits)
	}

	_, err = st.CreateTenant(ctx, opts.TenantLimits.tenant(DefaultTenant))
	if errors.Is(err, errdefs.ErrConflict) { // another replica is bootstrapping
		return false, addEnvToken(ctx, st, opts.EnvToken, opts.TenantLimits)
	}
	if err != nil {
		return false, fmt.Errorf("auth: bootstrap: %w", err)
	}
	secret, hash := opts.EnvToken, Hash(opts.EnvToken)
	if secret == "" {
		secret, hash = NewToken()
	}
	_, err = st.CreateToken(ctx, store.Token{TenantID: DefaultTenant, Name: "admin", Hash: hash, Admin: true})
	if errors.Is(err, errdefs.ErrConflict) && opts.EnvToken != "" {
		// A replica that started at the same moment added EnvToken
		// already (addEnvToken); it is stored either way.
		_, err = st.TokenByHash(ctx, hash)
	}
	if err != nil {
		return true, fmt.Errorf("auth: bootstrap: admin token: %w", err)
	}

	// Show the token before anything else can fail: only its hash is
	// stored, so a token not shown now is lost.
	if opts.EnvToken != "" {
		_, err = fmt.Fprintln(opts.Out, "admin token: CORRAL_ADMIN_TOKEN (not shown)")
	} else {
		_, err = fmt.Fprintf(opts.Out, "admin token (shown once): %s\n", secret)
	}
	if err != nil {
		return true, fmt.Errorf("auth: bootstrap: show admin token: %w", err)
	}

	path := opts.ConfigPath
	if path == "" {
		path = userconfig.Path()
	}
	if path == "" {
		fmt.Fprintln(opts.Out, "config file not written: none of CORRAL_CONFIG, XDG_CONFIG_HOME, HOME is set")
		return true, nil
	}
	if err := userconfig.Save(path, userconfig.Config{URL: opts.ServerURL, Token: secret}); err != nil {
		return true, fmt.Errorf("auth: bootstrap: %w", err)
	}
	fmt.Fprintf(opts.Out, "wrote the server URL and admin token to %s\n", path)
	return true, nil
}

// addEnvToken stores secret, if set and not stored yet, as an admin token
// of the default tenant (creating the tenant if needed).
func addEnvToken(ctx context.Context, st *store.Store, secret string, limits TenantLimits) error {
	if secret == "" {
		return nil
	}
	hash := Hash(secret)
	_, err := st.TokenByHash(ctx, hash)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errdefs.ErrNotFound) {
		return fmt.Errorf("auth: bootstrap: %w", err)
	}
	_, err = st.CreateTenant(ctx, limits.tenant(DefaultTenant))
	if err != nil && !errors.Is(err, errdefs.ErrConflict) {
		return fmt.Errorf("auth: bootstrap: %w", err)
	}
	_, err = st.CreateToken(ctx, store.Token{TenantID: DefaultTenant, Name: "admin (CORRAL_ADMIN_TOKEN)", Hash: hash, Admin: true})
	if errors.Is(err, errdefs.ErrConflict) {
		// Not valid, yet stored: revoked. Unless another replica added
		// it just now.
		if _, err := st.TokenByHash(ctx, hash); err == nil {
			return nil
		}
		return fmt.Errorf("auth: bootstrap: %w", errdefs.Conflictf("CORRAL_ADMIN_TOKEN was revoked; unset it or choose another"))
	}
	if err != nil {
		return fmt.Errorf("auth: bootstrap: %w", err)
	}
	return nil
}
