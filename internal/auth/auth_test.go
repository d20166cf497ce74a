package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// suite runs against every store backend, each case on a fresh database.
var suite = []struct {
	name string
	fn   func(t *testing.T, db testDB)
}{
	{"MiddlewareAccepts", testMiddlewareAccepts},
	{"MiddlewareRejects", testMiddlewareRejects},
	{"CachedPathNoQuery", testCachedPathNoQuery},
	{"RevokeImmediate", testRevokeImmediate},
	{"RevokeDuringLookup", testRevokeDuringLookup},
	{"RevokeConcurrent", testRevokeConcurrent},
	{"OtherReplicaWithinTTL", testOtherReplicaWithinTTL},
	{"RateLimit", testRateLimit},
	{"CreateOwnTenant", testCreateOwnTenant},
	{"CreatePrivileges", testCreatePrivileges},
	{"AdminCreatesTenant", testAdminCreatesTenant},
	{"TenantIsolation", testTenantIsolation},
	{"BootstrapOnce", testBootstrapOnce},
	{"BootstrapEnvToken", testBootstrapEnvToken},
	{"BootstrapEnvTokenLater", testBootstrapEnvTokenLater},
}

func TestBackends(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) {
					st, url := storetest.Fresh(t, b)
					tc.fn(t, testDB{st: st, url: url})
				})
			}
		})
	}
}

// testDB is a fresh database: an open store and its URL, for opening a
// second handle on it as another replica would.
type testDB struct {
	st  *store.Store
	url string
}

// clock is a fake time source for an Authenticator's cache and buckets.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newAuth returns an Authenticator over st whose clock only moves when the
// test says so.
func newAuth(st *store.Store, opts Options) (*Authenticator, *clock) {
	a := New(st, opts)
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a.now = c.now
	return a, c
}

// mkToken stores a token for tenantID (created if new) and returns its
// secret and principal.
func mkToken(t testing.TB, st *store.Store, tenantID string, admin bool) (string, Principal) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.GetTenant(ctx, tenantID); err != nil {
		if _, err := st.CreateTenant(ctx, store.Tenant{ID: tenantID, Name: tenantID}); err != nil {
			t.Fatalf("CreateTenant(%q) = %v", tenantID, err)
		}
	}
	secret, hash := NewToken()
	tok, err := st.CreateToken(ctx, store.Token{TenantID: tenantID, Name: "test", Hash: hash, Admin: admin})
	if err != nil {
		t.Fatalf("CreateToken = %v", err)
	}
	return secret, Principal{TenantID: tenantID, TokenID: tok.ID, Admin: admin}
}

// seen is what the handler behind the middleware saw.
type seen struct {
	Principal     Principal
	OK            bool
	RawQuery      string
	RequestURI    string
	Authorization string
}

// echo answers 200 with a JSON seen.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, ok := FromContext(r.Context())
	_ = json.NewEncoder(w).Encode(seen{p, ok, r.URL.RawQuery, r.RequestURI, r.Header.Get("Authorization")})
})

// get sends GET target through h with the Authorization header auth
// (none if "").
func get(h http.Handler, target, auth string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", target, nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// wantOK checks w is the echo of principal want.
func wantOK(t *testing.T, what string, w *httptest.ResponseRecorder, want Principal) seen {
	t.Helper()
	var s seen
	if w.Code != http.StatusOK {
		t.Fatalf("%s: status = %d (%s); want 200", what, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatalf("%s: body %q: %v", what, w.Body, err)
	}
	if !s.OK || s.Principal != want {
		t.Errorf("%s: principal = %+v (%v); want %+v", what, s.Principal, s.OK, want)
	}
	return s
}

// wantProblem checks w is a problem+json answer with status.
func wantProblem(t *testing.T, what string, w *httptest.ResponseRecorder, status int) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("%s: status = %d (%s); want %d", what, w.Code, w.Body, status)
	}
	if ct := w.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Errorf("%s: Content-Type = %q; want %q", what, ct, problem.ContentType)
	}
	var d problem.Details
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || d.Status != status || d.Detail == "" {
		t.Errorf("%s: body = %s (%v); want a problem with status %d and a detail", what, w.Body, err, status)
	}
}

func wantClass(t *testing.T, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Fatalf("%s = %v; want %v", what, err, class)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v", what, err)
	}
}
