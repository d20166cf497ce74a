// Package auth is the control plane's HTTP authentication layer: API tokens,
// the principal a request acts as, a middleware that checks bearer tokens
// and rate-limits each tenant, token management for the /v1/tokens
// handlers, and the first-start bootstrap of the admin token.
//
// # Tokens
//
// A token is "crl_" followed by 40 random base32 characters (200 bits). Only
// its SHA-256 (Hash) is stored; the secret is shown once, when it is made.
// A token belongs to a tenant and acts for it; an admin token may in
// addition create tokens, admin ones included, in any tenant.
//
// # Caching and revocation
//
// The middleware caches what a lookup found, keyed by the token's hash, for
// Options.CacheTTL, so a busy token costs no database query. Tokens that do
// not exist are cached too (a bounded number), so a client retrying with a
// revoked token does not reach the database either. Revoke through an
// Authenticator drops the token from that Authenticator's cache at once;
// other replicas, or other Authenticators over the same store, stop
// accepting it within their CacheTTL.
package auth

import "context"

// Principal is who a request acts as: a token and the tenant it belongs to.
type Principal struct {
	TenantID string
	TokenID  string
	Admin    bool // may create tokens, admin ones included, in any tenant
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx that carries p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, &p)
}

// withPrincipal is WithPrincipal for a Principal the cache owns: storing
// the pointer saves an allocation per request. *p must never change.
func withPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal Middleware (or WithPrincipal) put in
// ctx, and false if there is none.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	if !ok || p == nil {
		return Principal{}, false
	}
	return *p, true
}
