package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/store/storetest"
)

func testMiddlewareAccepts(t *testing.T, db testDB) {
	a, _ := newAuth(db.st, Options{})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)

	s := wantOK(t, "Bearer header", get(h, "/v1/jobs", "Bearer "+secret), p)
	if s.Authorization != "" {
		t.Errorf("handler saw Authorization %q; want it removed", s.Authorization)
	}
	wantOK(t, "lowercase scheme", get(h, "/v1/jobs", "bearer "+secret), p)

	r := httptest.NewRequest("GET", "/v1/jobs", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if r.Header.Get("Authorization") == "" {
		t.Errorf("the middleware changed the caller's request: Authorization removed")
	}

	s = wantOK(t, "access_token", get(h, "/v1/jobs/x/events?after=3&access_token="+secret+"&b=c", ""), p)
	if s.RawQuery != "after=3&b=c" || s.RequestURI != "/v1/jobs/x/events?after=3&b=c" {
		t.Errorf("handler saw query %q, RequestURI %q; want the token removed, the rest kept", s.RawQuery, s.RequestURI)
	}

	// Behind a ServeMux pattern, path values survive the middleware.
	mux := http.NewServeMux()
	mux.Handle("GET /v1/tokens/{id}", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.PathValue("id")))
	})))
	if w := get(mux, "/v1/tokens/tok_1", "Bearer "+secret); w.Code != http.StatusOK || w.Body.String() != "tok_1" {
		t.Errorf("PathValue behind the middleware = %d %q; want 200 tok_1", w.Code, w.Body)
	}
}

func testMiddlewareRejects(t *testing.T, db testDB) {
	a, _ := newAuth(db.st, Options{})
	h := a.Middleware(echo)
	secret, _ := mkToken(t, db.st, "acme", false)
	revoked, _ := mkToken(t, db.st, "acme", false)
	must(t, "RevokeToken", db.st.RevokeToken(context.Background(), "acme", mustLookup(t, db, revoked)))

	tests := []struct {
		name, target, auth string
	}{
		{"no token", "/v1/jobs", ""},
		{"basic scheme", "/v1/jobs", "Basic " + secret},
		{"token scheme", "/v1/jobs", "Token " + secret},
		{"scheme only", "/v1/jobs", "Bearer"},
		{"empty token", "/v1/jobs", "Bearer    "},
		{"garbage", "/v1/jobs", "Bearer garbage"},
		{"unknown crl token", "/v1/jobs", "Bearer crl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"token with suffix", "/v1/jobs", "Bearer " + secret + "x"},
		{"revoked", "/v1/jobs", "Bearer " + revoked},
		{"huge", "/v1/jobs", "Bearer " + strings.Repeat("a", 10000)},
		{"empty access_token", "/v1/jobs?access_token=", ""},
		{"garbage access_token", "/v1/jobs?access_token=nope", ""},
		{"wrong header wins over query", "/v1/jobs?access_token=" + secret, "Basic x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 2 { // the second time from the cache
				w := get(h, tc.target, tc.auth)
				wantProblem(t, tc.name, w, http.StatusUnauthorized)
				if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
					t.Errorf("#%d WWW-Authenticate = %q; want a Bearer challenge", i, got)
				}
			}
		})
	}
}

// mustLookup returns the id of the token secret.
func mustLookup(t *testing.T, db testDB, secret string) string {
	t.Helper()
	tok, err := db.st.TokenByHash(context.Background(), Hash(secret))
	must(t, "TokenByHash", err)
	return tok.ID
}

// testCachedPathNoQuery shows a cached token needs no database: with the
// store closed it still passes, until the cache entry expires.
func testCachedPathNoQuery(t *testing.T, db testDB) {
	st := storetest.Open(t, db.url)
	a, clk := newAuth(st, Options{CacheTTL: time.Minute})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)
	wantOK(t, "first request", get(h, "/", "Bearer "+secret), p)
	wantProblem(t, "first garbage", get(h, "/", "Bearer garbage-garbage"), http.StatusUnauthorized)

	must(t, "Close", st.Close())
	wantOK(t, "cached, store closed", get(h, "/", "Bearer "+secret), p)
	wantProblem(t, "cached garbage, store closed", get(h, "/", "Bearer garbage-garbage"), http.StatusUnauthorized)
	clk.add(time.Minute)
	wantProblem(t, "expired, store closed", get(h, "/", "Bearer "+secret), http.StatusServiceUnavailable)
}

func testRevokeImmediate(t *testing.T, db testDB) {
	a, _ := newAuth(db.st, Options{CacheTTL: time.Hour})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)
	wantOK(t, "before revoke", get(h, "/", "Bearer "+secret), p)
	must(t, "Revoke", a.Revoke(context.Background(), p, p.TokenID))
	wantProblem(t, "after revoke", get(h, "/", "Bearer "+secret), http.StatusUnauthorized)
	wantProblem(t, "after revoke, query", get(h, "/?access_token="+secret, ""), http.StatusUnauthorized)
}

// testRevokeDuringLookup: a lookup that read the token from the store
// just before Revoke, and fills the cache just after, must not bring the
// token back.
func testRevokeDuringLookup(t *testing.T, db testDB) {
	ctx := context.Background()
	a, clk := newAuth(db.st, Options{CacheTTL: time.Hour})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)

	gen := a.cache.generation() // what authenticate does before its query
	_, err := db.st.TokenByHash(ctx, Hash(secret))
	must(t, "TokenByHash", err)
	must(t, "Revoke", a.Revoke(ctx, p, p.TokenID))
	a.cache.put(Hash(secret), validEntry{p: &p}, gen, clk.now()) // the late fill
	wantProblem(t, "after revoke", get(h, "/", "Bearer "+secret), http.StatusUnauthorized)
}

// testRevokeConcurrent revokes while other requests keep filling the
// cache (run it with -race): once Revoke returns, no request passes.
func testRevokeConcurrent(t *testing.T, db testDB) {
	a, _ := newAuth(db.st, Options{CacheTTL: time.Hour, RatePerSecond: -1})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				get(h, "/", "Bearer "+secret)
				a.cache.forgetHash(Hash(secret)) // force lookups, not cache hits
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	must(t, "Revoke", a.Revoke(context.Background(), p, p.TokenID))
	for i := range 200 {
		if w := get(h, "/", "Bearer "+secret); w.Code != http.StatusUnauthorized {
			t.Errorf("request %d after Revoke: status %d; want 401", i, w.Code)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
}

// testOtherReplicaWithinTTL: a second Authenticator, on its own store
// handle like another replica, stops accepting a token revoked elsewhere
// once its cache entry expires.
func testOtherReplicaWithinTTL(t *testing.T, db testDB) {
	const ttl = 5 * time.Second
	a1, _ := newAuth(db.st, Options{CacheTTL: ttl})
	a2, clk2 := newAuth(storetest.Open(t, db.url), Options{CacheTTL: ttl})
	h1, h2 := a1.Middleware(echo), a2.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)
	wantOK(t, "replica 1", get(h1, "/", "Bearer "+secret), p)
	wantOK(t, "replica 2", get(h2, "/", "Bearer "+secret), p)

	must(t, "Revoke", a1.Revoke(context.Background(), p, p.TokenID))
	wantProblem(t, "replica 1 after revoke", get(h1, "/", "Bearer "+secret), http.StatusUnauthorized)
	clk2.add(ttl - time.Millisecond)
	wantOK(t, "replica 2 within TTL (cached)", get(h2, "/", "Bearer "+secret), p)
	clk2.add(time.Millisecond)
	wantProblem(t, "replica 2 after TTL", get(h2, "/", "Bearer "+secret), http.StatusUnauthorized)
}

func testRateLimit(t *testing.T, db testDB) {
	a, clk := newAuth(db.st, Options{RatePerSecond: 2, Burst: 3})
	h := a.Middleware(echo)
	secret, p := mkToken(t, db.st, "acme", false)
	secret2, p2 := mkToken(t, db.st, "acme", false) // same tenant, same bucket
	other, po := mkToken(t, db.st, "other", false)

	for i := range 3 {
		wantOK(t, "within burst", get(h, "/", "Bearer "+secret), p)
		_ = i
	}
	for _, tc := range []struct{ what, secret string }{{"over burst", secret}, {"same tenant, other token", secret2}} {
		w := get(h, "/", "Bearer "+tc.secret)
		wantProblem(t, tc.what, w, http.StatusTooManyRequests)
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("%s: Retry-After = %q; want \"1\" (one request per 0.5s)", tc.what, got)
		}
	}
	wantOK(t, "other tenant", get(h, "/", "Bearer "+other), po)

	clk.add(500 * time.Millisecond)
	wantOK(t, "after 0.5s", get(h, "/", "Bearer "+secret2), p2)
	wantProblem(t, "again at once", get(h, "/", "Bearer "+secret), http.StatusTooManyRequests)
	clk.add(2 * time.Second)
	for range 3 {
		wantOK(t, "after the bucket refilled", get(h, "/", "Bearer "+secret), p)
	}
}
