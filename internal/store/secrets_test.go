package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

func TestSecrets(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Run("RoundTrip", func(t *testing.T) { testSecretsRoundTrip(t, b) })
			t.Run("TenantIsolation", func(t *testing.T) { testSecretsIsolation(t, b) })
			t.Run("BadInput", func(t *testing.T) { testSecretsBadInput(t, b) })
			t.Run("ConcurrentPut", func(t *testing.T) { testSecretsConcurrent(t, b) })
		})
	}
}

func testSecretsRoundTrip(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano())
	s.SetClock(func() time.Time { return time.Unix(0, now.Load()) })
	tn := storetest.Tenant(t, s, "acme", 0)

	ct := []byte{0, 1, 2, 0xff, 'x'} // any bytes survive the base64 column
	sec, created, err := s.PutSecret(ctx, store.Secret{TenantID: tn.ID, Name: "GITHUB_TOKEN", Ciphertext: ct})
	if err != nil || !created {
		t.Fatalf("PutSecret(new) = %v, created %v; want created", err, created)
	}
	t0 := time.Unix(0, now.Load()).UTC()
	if !sec.CreatedAt.Equal(t0) || !sec.UpdatedAt.Equal(t0) {
		t.Errorf("PutSecret(new) times = %v, %v; want both %v", sec.CreatedAt, sec.UpdatedAt, t0)
	}
	got, err := s.GetSecret(ctx, tn.ID, "GITHUB_TOKEN")
	if err != nil || !bytes.Equal(got.Ciphertext, ct) || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("GetSecret = %+v, %v; want %v at %v", got, err, ct, t0)
	}

	now.Add(int64(time.Minute))
	t1 := time.Unix(0, now.Load()).UTC()
	sec, created, err = s.PutSecret(ctx, store.Secret{TenantID: tn.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte("v2")})
	if err != nil || created {
		t.Fatalf("PutSecret(replace) = %v, created %v; want replaced", err, created)
	}
	if !sec.CreatedAt.Equal(t0) || !sec.UpdatedAt.Equal(t1) {
		t.Errorf("PutSecret(replace) times = %v, %v; want %v, %v", sec.CreatedAt, sec.UpdatedAt, t0, t1)
	}
	if got, err := s.GetSecret(ctx, tn.ID, "GITHUB_TOKEN"); err != nil || string(got.Ciphertext) != "v2" || !got.UpdatedAt.Equal(t1) {
		t.Fatalf("GetSecret after replace = %+v, %v; want v2 at %v", got, err, t1)
	}

	for _, n := range []string{"b_SECOND", "A_FIRST"} {
		if _, _, err := s.PutSecret(ctx, store.Secret{TenantID: tn.ID, Name: n, Ciphertext: []byte("x")}); err != nil {
			t.Fatalf("PutSecret(%s) = %v", n, err)
		}
	}
	list, err := s.ListSecrets(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sec := range list {
		names = append(names, sec.Name)
		if sec.Ciphertext != nil {
			t.Errorf("ListSecrets gave %s's ciphertext; want none", sec.Name)
		}
	}
	if got, want := strings.Join(names, ","), "A_FIRST,GITHUB_TOKEN,b_SECOND"; got != want {
		t.Errorf("ListSecrets names = %s; want %s (by name)", got, want)
	}

	if err := s.DeleteSecret(ctx, tn.ID, "GITHUB_TOKEN"); err != nil {
		t.Fatalf("DeleteSecret = %v", err)
	}
	if _, err := s.GetSecret(ctx, tn.ID, "GITHUB_TOKEN"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetSecret after delete = %v; want ErrNotFound", err)
	}
	if err := s.DeleteSecret(ctx, tn.ID, "GITHUB_TOKEN"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("DeleteSecret twice = %v; want ErrNotFound", err)
	}
	// Set again after a delete: a new secret.
	if sec, created, err := s.PutSecret(ctx, store.Secret{TenantID: tn.ID, Name: "GITHUB_TOKEN", Ciphertext: []byte("v3")}); err != nil || !created || !sec.CreatedAt.Equal(t1) {
		t.Errorf("PutSecret after delete = %+v, created %v, %v; want created at %v", sec, created, err, t1)
	}
}

func testSecretsIsolation(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	a := storetest.Tenant(t, s, "a", 0)
	o := storetest.Tenant(t, s, "other", 0)
	if _, _, err := s.PutSecret(ctx, store.Secret{TenantID: a.ID, Name: "K", Ciphertext: []byte("a's")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSecret(ctx, o.ID, "K"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetSecret(other tenant) = %v; want ErrNotFound", err)
	}
	if err := s.DeleteSecret(ctx, o.ID, "K"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("DeleteSecret(other tenant) = %v; want ErrNotFound", err)
	}
	if list, err := s.ListSecrets(ctx, o.ID); err != nil || len(list) != 0 {
		t.Errorf("ListSecrets(other tenant) = %d secrets, %v; want none", len(list), err)
	}
	// The same name in another tenant is another secret.
	if _, created, err := s.PutSecret(ctx, store.Secret{TenantID: o.ID, Name: "K", Ciphertext: []byte("other's")}); err != nil || !created {
		t.Fatalf("PutSecret(other tenant, same name) = %v, created %v; want created", err, created)
	}
	if got, err := s.GetSecret(ctx, a.ID, "K"); err != nil || string(got.Ciphertext) != "a's" {
		t.Errorf("GetSecret(a) = %+v, %v; want a's own value", got, err)
	}
	if _, _, err := s.PutSecret(ctx, store.Secret{TenantID: "tn_nobody", Name: "K", Ciphertext: []byte("x")}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("PutSecret(unknown tenant) = %v; want ErrNotFound", err)
	}
}

func testSecretsBadInput(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "acme", 0)
	for _, sec := range []store.Secret{
		{TenantID: tn.ID, Name: "", Ciphertext: []byte("x")},
		{TenantID: tn.ID, Name: strings.Repeat("N", 129), Ciphertext: []byte("x")},
		{TenantID: "", Name: "K", Ciphertext: []byte("x")},
		{TenantID: tn.ID, Name: "K"},
		{TenantID: tn.ID, Name: "K", Ciphertext: make([]byte, 256<<10+1)},
	} {
		if _, _, err := s.PutSecret(ctx, sec); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("PutSecret(name %q, tenant %q, %d bytes) = %v; want ErrInvalid", sec.Name, sec.TenantID, len(sec.Ciphertext), err)
		}
	}
	if _, err := s.GetSecret(ctx, tn.ID, ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("GetSecret(\"\") = %v; want ErrInvalid", err)
	}
	if err := s.DeleteSecret(ctx, "", "K"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("DeleteSecret(no tenant) = %v; want ErrInvalid", err)
	}
}

// testSecretsConcurrent puts one new name from many goroutines at once:
// every put succeeds and exactly one of them created the row.
func testSecretsConcurrent(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "acme", 0)
	const n = 8
	var wg sync.WaitGroup
	var creators atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, created, err := s.PutSecret(ctx, store.Secret{TenantID: tn.ID, Name: "RACE", Ciphertext: fmt.Appendf(nil, "v%d", i)})
			if created {
				creators.Add(1)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent PutSecret = %v", err)
		}
	}
	if got := creators.Load(); got != 1 {
		t.Errorf("%d concurrent PutSecrets reported created; want exactly 1", got)
	}
}
