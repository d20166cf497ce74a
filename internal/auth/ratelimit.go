package auth

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiters holds one token bucket per tenant, shared by all its tokens.
// Buckets are made on first use and kept: there is one per tenant that has
// used the API since the process started, a small and bounded number.
type limiters struct {
	limit rate.Limit // 0: no limit
	burst int

	mu sync.Mutex // guards m
	m  map[string]*rate.Limiter
}

// get returns tenantID's bucket, or nil when rate limiting is off.
func (l *limiters) get(tenantID string) *rate.Limiter {
	if l.limit == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[tenantID]
	if !ok {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.m[tenantID] = lim
	}
	return lim
}

// allow takes one request from lim at now. When the bucket is empty it
// returns false and how many whole seconds (at least 1) until a request
// would be allowed, the value of a Retry-After header.
func allow(lim *rate.Limiter, now time.Time) (ok bool, retryAfter int) {
	if lim.AllowN(now, 1) {
		return true, 0
	}
	wait := (1 - lim.TokensAt(now)) / float64(lim.Limit())
	return false, max(1, int(math.Ceil(wait)))
}
