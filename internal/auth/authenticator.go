package auth

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// Options configures an Authenticator. The zero value gives the defaults.
type Options struct {
	// CacheTTL is how long a token lookup is remembered, and so how long
	// another replica may still accept a token after it is revoked.
	// 0 means 5s; a negative value turns the cache off.
	CacheTTL time.Duration
	// RatePerSecond is the sustained requests per second allowed to each
	// tenant, all its tokens together. 0 means 50; a negative value turns
	// rate limiting off.
	RatePerSecond float64
	// Burst is how many requests a tenant may make at once above the rate.
	// 0 means 100.
	Burst int
	// TenantLimits are given to tenants created through Create (a token
	// for a new tenant); zero fields mean unlimited.
	TenantLimits TenantLimits
	// Log receives what the middleware cannot tell the client, such as a
	// failure to record a token's use. nil discards it.
	Log *slog.Logger
}

// TenantLimits cap what one tenant may run at once; 0 means unlimited.
type TenantLimits struct {
	MaxConcurrentJobs int
	MaxSandboxes      int
}

// tenant returns a tenant record with the limits applied.
func (l TenantLimits) tenant(id string) store.Tenant {
	return store.Tenant{ID: id, Name: id, MaxConcurrentJobs: l.MaxConcurrentJobs, MaxSandboxes: l.MaxSandboxes}
}

// Defaults for Options.
const (
	DefaultCacheTTL      = 5 * time.Second
	DefaultRatePerSecond = 50
	DefaultBurst         = 100
)

// Authenticator checks API tokens against a store and manages them. It is
// safe for concurrent use and starts no goroutines.
type Authenticator struct {
	st         *store.Store
	log        *slog.Logger
	newTenants TenantLimits // for tenants Create makes
	cache      *cache
	limits     *limiters
	now        func() time.Time // tests move it forward
}

// New returns an Authenticator over st.
func New(st *store.Store, opts Options) *Authenticator {
	if opts.CacheTTL == 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.RatePerSecond == 0 {
		opts.RatePerSecond = DefaultRatePerSecond
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	l := &limiters{burst: opts.Burst, m: map[string]*rate.Limiter{}}
	if opts.RatePerSecond > 0 {
		l.limit = rate.Limit(opts.RatePerSecond)
	}
	return &Authenticator{st: st, log: opts.Log, newTenants: opts.TenantLimits, cache: newCache(opts.CacheTTL), limits: l, now: time.Now}
}

var (
	errNoToken  = errdefs.Unauthorizedf("a bearer token is required (Authorization: Bearer <token>)")
	errBadToken = errdefs.Unauthorizedf("the bearer token is not valid")
)

// authenticate returns the Principal of secret and its tenant's rate
// limiter (nil: unlimited). An unknown or revoked token is errBadToken.
func (a *Authenticator) authenticate(ctx context.Context, secret string, now time.Time) (*Principal, *rate.Limiter, error) {
	if len(secret) > maxSecret {
		return nil, nil, errBadToken
	}
	var hash [64]byte
	hashInto(&hash, secret)
	if e, ok := a.cache.get(hash[:], now); ok {
		if e.p == nil {
			return nil, nil, errBadToken
		}
		return e.p, e.lim, nil
	}

	gen := a.cache.generation()
	key := string(hash[:])
	tok, err := a.st.TokenByHash(ctx, key)
	switch {
	case errors.Is(err, errdefs.ErrNotFound):
		a.cache.put(key, validEntry{}, gen, now)
		return nil, nil, errBadToken
	case err != nil:
		return nil, nil, errdefs.Wrap(errdefs.ErrUnavailable, err, "cannot check the token now; try again")
	}
	e := validEntry{
		p:   &Principal{TenantID: tok.TenantID, TokenID: tok.ID, Admin: tok.Admin},
		lim: a.limits.get(tok.TenantID),
	}
	a.cache.put(key, e, gen, now)
	return e.p, e.lim, nil
}
