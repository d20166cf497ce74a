package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

func hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func testMigrationsIdempotent(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	url := b.NewURL(t)

	// Two Opens at once on the empty database: one migrates, the other
	// waits for it and then finds nothing to do.
	openBoth := func(what string) {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				s, err := store.Open(ctx, url, nil)
				if err == nil {
					s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: Open #%d = %v", what, i+1, err)
			}
		}
	}
	openBoth("fresh database")

	s1, err := store.Open(ctx, url, nil)
	must(t, "Open", err)
	tn := storetest.Tenant(t, s1, "acme", 0)
	must(t, "Close", s1.Close())

	openBoth("migrated database")
	s2 := storetest.Open(t, url)
	if got, err := s2.GetTenant(ctx, tn.ID); err != nil || got.Name != "acme" {
		t.Fatalf("GetTenant after reopen = %v, %v; want acme", got, err)
	}
	ts, err := s2.ListTenants(ctx)
	if err != nil || len(ts) != 1 {
		t.Fatalf("ListTenants = %d tenants, %v; want 1", len(ts), err)
	}
}

func testTenants(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	a, err := s.CreateTenant(ctx, store.Tenant{Name: "a", MaxConcurrentJobs: 3, MaxSandboxes: 5})
	must(t, "CreateTenant", err)
	if !strings.HasPrefix(a.ID, "tn_") || a.CreatedAt.IsZero() {
		t.Errorf("CreateTenant = %+v; want a tn_ id and a creation time", a)
	}
	got, err := s.GetTenant(ctx, a.ID)
	must(t, "GetTenant", err)
	if *got != *a {
		t.Errorf("GetTenant = %+v; want %+v", got, a)
	}
	_, err = s.CreateTenant(ctx, store.Tenant{ID: "default", Name: "default"})
	must(t, "CreateTenant(default)", err)
	_, err = s.CreateTenant(ctx, store.Tenant{ID: "default", Name: "again"})
	wantClass(t, "CreateTenant(duplicate id)", err, errdefs.ErrConflict)
	_, err = s.CreateTenant(ctx, store.Tenant{Name: ""})
	wantClass(t, "CreateTenant(no name)", err, errdefs.ErrInvalid)
	_, err = s.CreateTenant(ctx, store.Tenant{ID: "Bad ID", Name: "x"})
	wantClass(t, "CreateTenant(bad id)", err, errdefs.ErrInvalid)
	_, err = s.CreateTenant(ctx, store.Tenant{Name: "x", MaxConcurrentJobs: -1})
	wantClass(t, "CreateTenant(negative limit)", err, errdefs.ErrInvalid)
	_, err = s.GetTenant(ctx, "tn_missing")
	wantClass(t, "GetTenant(missing)", err, errdefs.ErrNotFound)
	ts, err := s.ListTenants(ctx)
	if err != nil || len(ts) != 2 || ts[0].ID != a.ID {
		t.Errorf("ListTenants = %v, %v; want [%s default]", ts, err, a.ID)
	}

	// Limits change one at a time; nil keeps one, 0 lifts it.
	seven, zero, neg := 7, 0, -1
	got, err = s.SetTenantLimits(ctx, a.ID, &seven, nil)
	if err != nil || got.MaxConcurrentJobs != 7 || got.MaxSandboxes != 5 {
		t.Errorf("SetTenantLimits(jobs 7) = %+v, %v; want 7 jobs, 5 sandboxes", got, err)
	}
	got, err = s.SetTenantLimits(ctx, a.ID, nil, &zero)
	if err != nil || got.MaxConcurrentJobs != 7 || got.MaxSandboxes != 0 {
		t.Errorf("SetTenantLimits(sandboxes 0) = %+v, %v; want 7 jobs, unlimited sandboxes", got, err)
	}
	_, err = s.SetTenantLimits(ctx, a.ID, &neg, nil)
	wantClass(t, "SetTenantLimits(negative)", err, errdefs.ErrInvalid)
	_, err = s.SetTenantLimits(ctx, "tn_missing", &seven, nil)
	wantClass(t, "SetTenantLimits(missing)", err, errdefs.ErrNotFound)
	if got, _ := s.GetTenant(ctx, a.ID); got.MaxConcurrentJobs != 7 || got.MaxSandboxes != 0 || got.Name != "a" {
		t.Errorf("after the refused changes, tenant = %+v", got)
	}
}

func testTokens(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	tok, err := s.CreateToken(ctx, store.Token{TenantID: tn.ID, Name: "ci", Hash: hash("secret-1"), Admin: true})
	must(t, "CreateToken", err)
	got, err := s.TokenByHash(ctx, hash("secret-1"))
	must(t, "TokenByHash", err)
	if got.ID != tok.ID || !got.Admin || got.TenantID != tn.ID || !got.LastUsedAt.IsZero() {
		t.Errorf("TokenByHash = %+v; want %+v", got, tok)
	}

	_, err = s.CreateToken(ctx, store.Token{TenantID: tn.ID, Hash: hash("secret-1")})
	wantClass(t, "CreateToken(same hash)", err, errdefs.ErrConflict)
	_, err = s.CreateToken(ctx, store.Token{TenantID: tn.ID, Hash: "secret-1"})
	wantClass(t, "CreateToken(unhashed)", err, errdefs.ErrInvalid)
	_, err = s.CreateToken(ctx, store.Token{TenantID: tn.ID, Hash: strings.ToUpper(hash("x"))})
	wantClass(t, "CreateToken(uppercase hash)", err, errdefs.ErrInvalid)
	_, err = s.CreateToken(ctx, store.Token{TenantID: "tn_missing", Hash: hash("secret-2")})
	wantClass(t, "CreateToken(unknown tenant)", err, errdefs.ErrNotFound)
	_, err = s.TokenByHash(ctx, hash("nope"))
	wantClass(t, "TokenByHash(unknown)", err, errdefs.ErrNotFound)

	must(t, "TouchToken", s.TouchToken(ctx, tok.ID))
	must(t, "TouchToken again", s.TouchToken(ctx, tok.ID))
	must(t, "TouchToken(unknown)", s.TouchToken(ctx, "tok_missing"))
	got, err = s.TokenByHash(ctx, hash("secret-1"))
	must(t, "TokenByHash", err)
	if got.LastUsedAt.IsZero() {
		t.Errorf("after TouchToken, LastUsedAt is zero")
	}

	tok2, err := s.CreateToken(ctx, store.Token{TenantID: tn.ID, Name: "second", Hash: hash("secret-2")})
	must(t, "CreateToken #2", err)
	must(t, "RevokeToken", s.RevokeToken(ctx, tn.ID, tok.ID))
	must(t, "RevokeToken (again)", s.RevokeToken(ctx, tn.ID, tok.ID))
	_, err = s.TokenByHash(ctx, hash("secret-1"))
	wantClass(t, "TokenByHash(revoked)", err, errdefs.ErrNotFound)
	wantClass(t, "RevokeToken(unknown)", s.RevokeToken(ctx, tn.ID, "tok_missing"), errdefs.ErrNotFound)
	toks, err := s.ListTokens(ctx, tn.ID)
	must(t, "ListTokens", err)
	if len(toks) != 2 || toks[0].ID != tok.ID || toks[0].RevokedAt.IsZero() || toks[1].ID != tok2.ID || !toks[1].RevokedAt.IsZero() {
		t.Errorf("ListTokens = %+v, %+v; want [revoked %s, live %s]", toks[0], toks[1], tok.ID, tok2.ID)
	}
}
