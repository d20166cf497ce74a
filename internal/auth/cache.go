package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxNegative bounds how many unknown hashes the cache remembers, so a
// client sending endless random tokens cannot grow it without limit.
const maxNegative = 4096

// cache remembers, for ttl, what looking up a token hash found: the
// Principal (and its tenant's rate limiter) of a valid token, or that
// there is no valid token with that hash. A ttl <= 0 turns it off.
//
// Invalidation is made race-free by a generation number: a lookup reads
// the generation before it queries the store and fills the cache only if
// no invalidation happened meanwhile, so a query that saw a token just
// before Revoke cannot put it back after Revoke dropped it.
//
// Expired entries are removed by a sweep, at most once per ttl, done by the
// call that fills the cache; there is no background goroutine.
type cache struct {
	ttl time.Duration

	mu        sync.RWMutex // guards everything below
	valid     map[string]validEntry
	invalid   map[string]time.Time // hash -> expiry
	gen       uint64
	nextSweep time.Time
}

type validEntry struct {
	p       *Principal // shared with requests' contexts: never modified
	lim     *rate.Limiter
	expires time.Time
}

func newCache(ttl time.Duration) *cache {
	return &cache{ttl: ttl, valid: map[string]validEntry{}, invalid: map[string]time.Time{}}
}

// get returns what the cache knows about hash: found reports whether it
// knows anything; e.p is nil for a hash known to be invalid.
func (c *cache) get(hash []byte, now time.Time) (e validEntry, found bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if e, ok := c.valid[string(hash)]; ok && now.Before(e.expires) {
		return e, true
	}
	if exp, ok := c.invalid[string(hash)]; ok && now.Before(exp) {
		return validEntry{}, true
	}
	return validEntry{}, false
}

// generation is read before a store lookup and handed to put.
func (c *cache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put remembers e (e.p nil: invalid) for hash, unless the cache was
// invalidated since gen was read.
func (c *cache) put(hash string, e validEntry, gen uint64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if !now.Before(c.nextSweep) {
		c.sweep(now)
	}
	e.expires = now.Add(c.ttl)
	if e.p == nil {
		if len(c.invalid) < maxNegative {
			c.invalid[hash] = e.expires
		}
		delete(c.valid, hash)
		return
	}
	c.valid[hash] = e
	delete(c.invalid, hash)
}

// sweep removes expired entries. c.mu must be held.
func (c *cache) sweep(now time.Time) {
	for h, e := range c.valid {
		if !now.Before(e.expires) {
			delete(c.valid, h)
		}
	}
	for h, exp := range c.invalid {
		if !now.Before(exp) {
			delete(c.invalid, h)
		}
	}
	c.nextSweep = now.Add(c.ttl)
}

// forgetToken drops the entry of token id, which was just revoked.
func (c *cache) forgetToken(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for h, e := range c.valid {
		if e.p.TokenID == id {
			delete(c.valid, h)
		}
	}
}

// forgetHash drops what the cache knows of hash, which now belongs to a
// new token.
func (c *cache) forgetHash(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.valid, hash)
	delete(c.invalid, hash)
}
