package auth

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/store"
)

var secretRE = regexp.MustCompile(`^crl_[a-z2-7]{40}$`)

func testCreateOwnTenant(t *testing.T, db testDB) {
	ctx := context.Background()
	a, _ := newAuth(db.st, Options{})
	h := a.Middleware(echo)
	_, by := mkToken(t, db.st, "acme", false)

	tok, err := a.Create(ctx, by, cpapi.TokenRequest{Name: "ci"})
	must(t, "Create", err)
	if !secretRE.MatchString(tok.Secret) || tok.Tenant != "acme" || tok.Admin || tok.Name != "ci" || tok.CreatedAt.IsZero() {
		t.Errorf("Create = %+v; want a non-admin token ci of acme with a crl_ secret", tok)
	}
	wantOK(t, "new token", get(h, "/", "Bearer "+tok.Secret), Principal{TenantID: "acme", TokenID: tok.ID})

	// Naming the own tenant, by name, is not asking for privilege.
	_, err = a.Create(ctx, by, cpapi.TokenRequest{Name: "again", Tenant: "acme"})
	must(t, "Create(own tenant by name)", err)

	for _, tc := range []struct{ what, name string }{
		{"empty", ""},
		{"blank", "   "},
		{"101 characters", strings.Repeat("x", 101)},
		{"control character", "a\nb"},
	} {
		_, err := a.Create(ctx, by, cpapi.TokenRequest{Name: tc.name})
		wantClass(t, "Create(name "+tc.what+")", err, errdefs.ErrInvalid)
	}
	_, err = a.Create(ctx, by, cpapi.TokenRequest{Name: strings.Repeat("é", 100)})
	must(t, "Create(100 characters)", err)
	_, err = a.Create(ctx, Principal{}, cpapi.TokenRequest{Name: "x"})
	wantClass(t, "Create(no principal)", err, errdefs.ErrUnauthorized)
}

func testCreatePrivileges(t *testing.T, db testDB) {
	ctx := context.Background()
	a, _ := newAuth(db.st, Options{})
	_, user := mkToken(t, db.st, "acme", false)
	mkToken(t, db.st, "other", false)

	tests := []struct {
		what string
		req  cpapi.TokenRequest
	}{
		{"admin token", cpapi.TokenRequest{Name: "x", Admin: true}},
		{"other tenant", cpapi.TokenRequest{Name: "x", Tenant: "other"}},
		{"new tenant", cpapi.TokenRequest{Name: "x", Tenant: "newco"}},
		{"admin token, own tenant", cpapi.TokenRequest{Name: "x", Tenant: "acme", Admin: true}},
	}
	for _, tc := range tests {
		_, err := a.Create(ctx, user, tc.req)
		wantClass(t, "non-admin Create("+tc.what+")", err, errdefs.ErrForbidden)
		if got := statusOf(err); got != http.StatusForbidden {
			t.Errorf("non-admin Create(%s) status = %d; want 403", tc.what, got)
		}
	}
	if _, err := db.st.GetTenant(ctx, "newco"); err == nil {
		t.Errorf("a refused Create made tenant newco")
	}
	list, err := a.List(ctx, user)
	must(t, "List", err)
	if len(list.Tokens) != 1 {
		t.Errorf("after refused Creates, List = %d tokens; want 1", len(list.Tokens))
	}
}

func testAdminCreatesTenant(t *testing.T, db testDB) {
	ctx := context.Background()
	a, _ := newAuth(db.st, Options{})
	h := a.Middleware(echo)
	_, admin := mkToken(t, db.st, "default", true)

	tok, err := a.Create(ctx, admin, cpapi.TokenRequest{Name: "newco-ci", Tenant: "newco"})
	must(t, "Create(new tenant)", err)
	if tok.Tenant != "newco" || tok.Admin {
		t.Errorf("Create(new tenant) = %+v; want a non-admin token of newco", tok)
	}
	tn, err := db.st.GetTenant(ctx, "newco")
	must(t, "GetTenant(newco)", err)
	if tn.Name != "newco" {
		t.Errorf("tenant newco is named %q; want newco", tn.Name)
	}
	newco := Principal{TenantID: "newco", TokenID: tok.ID}
	wantOK(t, "token of the new tenant", get(h, "/", "Bearer "+tok.Secret), newco)

	tok2, err := a.Create(ctx, admin, cpapi.TokenRequest{Name: "second", Tenant: "newco", Admin: true})
	must(t, "Create(existing tenant, admin)", err)
	if tok2.Tenant != "newco" || !tok2.Admin {
		t.Errorf("Create(existing tenant, admin) = %+v; want an admin token of newco", tok2)
	}
	list, err := a.List(ctx, newco)
	must(t, "List(newco)", err)
	if len(list.Tokens) != 2 {
		t.Errorf("List(newco) = %d tokens; want 2 (one tenant, not two)", len(list.Tokens))
	}

	// A tenant made elsewhere, with a generated id, is found by its name.
	tn2 := mustTenant(t, db, "Acme Inc")
	tok3, err := a.Create(ctx, admin, cpapi.TokenRequest{Name: "x", Tenant: "Acme Inc"})
	must(t, "Create(tenant by name)", err)
	if tok3.Tenant != tn2 {
		t.Errorf("Create(tenant by name) tenant = %q; want %q", tok3.Tenant, tn2)
	}
	_, err = a.Create(ctx, admin, cpapi.TokenRequest{Name: "x", Tenant: "Not A Slug"})
	wantClass(t, "Create(new tenant, bad name)", err, errdefs.ErrInvalid)
}

func testTenantIsolation(t *testing.T, db testDB) {
	ctx := context.Background()
	a, _ := newAuth(db.st, Options{})
	h := a.Middleware(echo)
	secretA, pa := mkToken(t, db.st, "a", false)
	_, pb := mkToken(t, db.st, "b", true) // even an admin of b
	wantOK(t, "use a's token", get(h, "/", "Bearer "+secretA), pa)

	err := a.Revoke(ctx, pb, pa.TokenID)
	wantClass(t, "b revokes a's token", err, errdefs.ErrNotFound)
	if got := statusOf(err); got != http.StatusNotFound {
		t.Errorf("b revokes a's token: status %d; want 404", got)
	}
	wantClass(t, "Revoke(unknown)", a.Revoke(ctx, pb, "tok_nope"), errdefs.ErrNotFound)
	wantOK(t, "a's token after b's attempt", get(h, "/", "Bearer "+secretA), pa)

	listA, err := a.List(ctx, pa)
	must(t, "List(a)", err)
	listB, err := a.List(ctx, pb)
	must(t, "List(b)", err)
	if len(listA.Tokens) != 1 || listA.Tokens[0].ID != pa.TokenID || len(listB.Tokens) != 1 || listB.Tokens[0].ID != pb.TokenID {
		t.Fatalf("List(a) = %+v, List(b) = %+v; want each its own token only", listA.Tokens, listB.Tokens)
	}
	if got := listA.Tokens[0]; got.Secret != "" || got.LastUsedAt == nil {
		t.Errorf("List(a) = %+v; want no secret and a last use", got)
	}

	must(t, "a revokes its own", a.Revoke(ctx, pa, pa.TokenID))
	must(t, "a revokes it again", a.Revoke(ctx, pa, pa.TokenID))
	listA, err = a.List(ctx, pa)
	must(t, "List(a) after revoke", err)
	if len(listA.Tokens) != 0 {
		t.Errorf("List(a) after revoke = %+v; want none", listA.Tokens)
	}
}

// mustTenant creates a tenant with a generated id and returns the id.
func mustTenant(t *testing.T, db testDB, name string) string {
	t.Helper()
	tn, err := db.st.CreateTenant(context.Background(), store.Tenant{Name: name})
	must(t, "CreateTenant", err)
	return tn.ID
}

// statusOf is the HTTP status a handler returning err would answer.
func statusOf(err error) int { return problem.Status(err) }
