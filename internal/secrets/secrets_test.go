package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/secrets"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

type env struct {
	st   *store.Store
	svc  *secrets.Service
	a, b string // two tenants
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, _ := storetest.Fresh(t, storetest.Backends()[0]) // SQLite; the store tests cover PostgreSQL
	key, err := secrets.LoadKey("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	return &env{st: st, svc: svc,
		a: storetest.Tenant(t, st, "a", 0).ID, b: storetest.Tenant(t, st, "b", 0).ID}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, v := range []string{"ghp_0123456789abcdefghij", "ünïcødé ✓ and\nnewlines\ttabs", strings.Repeat("x", secrets.MaxValueBytes), "a"} {
		info, _, err := e.svc.Set(ctx, e.a, "TOKEN", v)
		if err != nil {
			t.Fatalf("Set(%d bytes) = %v", len(v), err)
		}
		if info.Name != "TOKEN" || info.CreatedAt.IsZero() || info.UpdatedAt.Before(info.CreatedAt) {
			t.Errorf("Set(%d bytes) = %+v; want TOKEN with times", len(v), info)
		}
		got, err := e.svc.Get(ctx, e.a, "TOKEN")
		if err != nil || got != v {
			t.Fatalf("Get after Set(%d bytes) = %d bytes, %v; want the same value", len(v), len(got), err)
		}
	}
	if _, created, err := e.svc.Set(ctx, e.a, "NEW_ONE", "value"); err != nil || !created {
		t.Errorf("Set(new) = created %v, %v; want created", created, err)
	}
	if _, created, err := e.svc.Set(ctx, e.a, "NEW_ONE", "value2"); err != nil || created {
		t.Errorf("Set(existing) = created %v, %v; want replaced", created, err)
	}

	list, err := e.svc.List(ctx, e.a)
	if err != nil || len(list) != 2 || list[0].Name != "NEW_ONE" || list[1].Name != "TOKEN" {
		t.Fatalf("List = %+v, %v; want NEW_ONE, TOKEN", list, err)
	}
	vals, err := e.svc.Resolve(ctx, e.a, []string{"TOKEN", "NEW_ONE", "TOKEN"})
	if err != nil || len(vals) != 2 || vals["NEW_ONE"] != "value2" || vals["TOKEN"] != "a" {
		t.Errorf("Resolve = %v, %v; want both values", vals, err)
	}
	if _, err := e.svc.Resolve(ctx, e.a, []string{"TOKEN", "MISSING"}); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "MISSING") {
		t.Errorf("Resolve(with a missing one) = %v; want ErrNotFound naming MISSING", err)
	}
	if err := e.svc.Delete(ctx, e.a, "TOKEN"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Get(ctx, e.a, "TOKEN"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete = %v; want ErrNotFound", err)
	}
	if err := e.svc.Delete(ctx, e.a, "TOKEN"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Delete twice = %v; want ErrNotFound", err)
	}
}

func TestAtRest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const v = "super-secret-value-0123456789"
	if _, _, err := e.svc.Set(ctx, e.a, "K", v); err != nil {
		t.Fatal(err)
	}
	first, err := e.st.GetSecret(ctx, e.a, "K")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(first.Ciphertext, []byte(v)) || bytes.Contains(first.Ciphertext, []byte("secret")) {
		t.Fatalf("the stored ciphertext contains the value")
	}
	if _, _, err := e.svc.Set(ctx, e.a, "K", v); err != nil {
		t.Fatal(err)
	}
	second, _ := e.st.GetSecret(ctx, e.a, "K")
	if bytes.Equal(first.Ciphertext, second.Ciphertext) {
		t.Errorf("the same value sealed twice gave the same ciphertext; want a fresh nonce each time")
	}
}

func TestOtherTenant(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, _, err := e.svc.Set(ctx, e.a, "K", "a's value"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Get(ctx, e.b, "K"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get(other tenant) = %v; want ErrNotFound", err)
	}
	if err := e.svc.Delete(ctx, e.b, "K"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Delete(other tenant) = %v; want ErrNotFound", err)
	}
	if list, err := e.svc.List(ctx, e.b); err != nil || len(list) != 0 {
		t.Errorf("List(other tenant) = %+v, %v; want none", list, err)
	}
	if got, err := e.svc.Get(ctx, e.a, "K"); err != nil || got != "a's value" {
		t.Errorf("Get(owner) = %q, %v", got, err)
	}
}

// TestMovedCiphertext copies a valid ciphertext to another row: another
// tenant's secret of the same name, and another name of the same tenant.
// Neither opens.
func TestMovedCiphertext(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, _, err := e.svc.Set(ctx, e.a, "K", "a's value"); err != nil {
		t.Fatal(err)
	}
	sec, _ := e.st.GetSecret(ctx, e.a, "K")
	for _, to := range []struct{ tenant, name string }{{e.b, "K"}, {e.a, "OTHER"}} {
		if _, _, err := e.st.PutSecret(ctx, store.Secret{TenantID: to.tenant, Name: to.name, Ciphertext: sec.Ciphertext}); err != nil {
			t.Fatal(err)
		}
		got, err := e.svc.Get(ctx, to.tenant, to.name)
		if !errors.Is(err, secrets.ErrCorrupt) || !errors.Is(err, errdefs.ErrUnprocessable) {
			t.Errorf("Get(%s/%s) of a moved ciphertext = %q, %v; want ErrCorrupt (ErrUnprocessable)", to.tenant, to.name, got, err)
		}
	}
}

func TestTampered(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, _, err := e.svc.Set(ctx, e.a, "K", "the value"); err != nil {
		t.Fatal(err)
	}
	orig, _ := e.st.GetSecret(ctx, e.a, "K")
	put := func(ct []byte) error {
		_, _, err := e.st.PutSecret(ctx, store.Secret{TenantID: e.a, Name: "K", Ciphertext: ct})
		return err
	}
	for i := range orig.Ciphertext {
		ct := bytes.Clone(orig.Ciphertext)
		ct[i] ^= 0x01
		if err := put(ct); err != nil {
			t.Fatal(err)
		}
		want := secrets.ErrCorrupt
		if i >= 1 && i < 9 { // the key id: it reads as another key
			want = secrets.ErrWrongKey
		}
		if got, err := e.svc.Get(ctx, e.a, "K"); !errors.Is(err, want) || !errors.Is(err, errdefs.ErrUnprocessable) {
			t.Fatalf("Get with byte %d flipped = %q, %v; want %v", i, got, err, want)
		}
	}
	for _, n := range []int{1, 20, len(orig.Ciphertext) - 1} {
		if err := put(orig.Ciphertext[:n]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Get(ctx, e.a, "K"); !errors.Is(err, secrets.ErrCorrupt) {
			t.Errorf("Get of a ciphertext cut to %d bytes = %v; want ErrCorrupt", n, err)
		}
	}
	if err := put(orig.Ciphertext); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Get(ctx, e.a, "K"); err != nil || got != "the value" {
		t.Errorf("Get of the restored ciphertext = %q, %v", got, err)
	}
}

// TestWrongKey opens secrets with another key, as after losing the key
// file: the error says so, names both key ids and never shows the value.
func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const v = "value-that-must-not-leak"
	if _, _, err := e.svc.Set(ctx, e.a, "K", v); err != nil {
		t.Fatal(err)
	}
	other, err := secrets.LoadKey("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := secrets.New(e.st, other)
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc2.Get(ctx, e.a, "K")
	if !errors.Is(err, secrets.ErrWrongKey) || !errors.Is(err, errdefs.ErrUnprocessable) {
		t.Fatalf("Get with another key = %q, %v; want ErrWrongKey", got, err)
	}
	msg := err.Error()
	for _, want := range []string{`"K"`, "another secrets key", e.svc.KeyID(), svc2.KeyID(), secrets.KeyEnv, secrets.KeyFile} {
		if !strings.Contains(msg, want) {
			t.Errorf("wrong-key message %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, v) {
		t.Errorf("wrong-key message shows the value")
	}
	// Setting it again with the new key makes it readable by that key.
	if _, _, err := svc2.Set(ctx, e.a, "K", "new"); err != nil {
		t.Fatal(err)
	}
	if got, err := svc2.Get(ctx, e.a, "K"); err != nil || got != "new" {
		t.Errorf("Get after re-setting = %q, %v", got, err)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, name := range []string{"A", "_", "a1", "GITHUB_TOKEN", "_x_9", strings.Repeat("N", 128)} {
		if _, _, err := e.svc.Set(ctx, e.a, name, "v"); err != nil {
			t.Errorf("Set(name %q) = %v; want ok", name, err)
		}
	}
	for _, name := range []string{"", "1A", "A-B", "A B", "A.B", "É", "../etc/passwd", "A\x00B", "A=B", "A\n", "$A", strings.Repeat("N", 129)} {
		if _, _, err := e.svc.Set(ctx, e.a, name, "v"); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Set(name %q) = %v; want ErrInvalid", name, err)
		}
		if _, err := e.svc.Get(ctx, e.a, name); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Get(name %q) = %v; want ErrInvalid", name, err)
		}
		if err := e.svc.Delete(ctx, e.a, name); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Delete(name %q) = %v; want ErrInvalid", name, err)
		}
	}
	for _, tc := range []struct{ what, value string }{
		{"empty", ""},
		{"over 64 KiB", strings.Repeat("zq9", secrets.MaxValueBytes/3+1)},
		{"invalid UTF-8", "zq9\xff\xfe"},
		{"a NUL byte", "zq9\x00zq9"},
	} {
		_, _, err := e.svc.Set(ctx, e.a, "K", tc.value)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Set(value %s) = %v; want ErrInvalid", tc.what, err)
			continue
		}
		if strings.Contains(err.Error(), "zq9") {
			t.Errorf("Set(value %s) error %q shows the value", tc.what, err)
		}
	}
	if list, _ := e.svc.List(ctx, e.a); len(list) != 6 {
		t.Errorf("List after the invalid Sets = %d secrets; want the 6 valid ones", len(list))
	}
}
