package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

func TestControlPlaneSecrets(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, time.Minute)

	sec, created, err := cp.SetSecret(ctx, "API_KEY", "sk-value-1")
	if err != nil || !created || sec.Name != "API_KEY" || sec.CreatedAt.IsZero() {
		t.Fatalf("SetSecret(new) = %+v, created %v, %v; want API_KEY created", sec, created, err)
	}
	again, created, err := cp.SetSecret(ctx, "API_KEY", "sk-value-2")
	if err != nil || created || !again.CreatedAt.Equal(sec.CreatedAt) || again.UpdatedAt.Before(sec.UpdatedAt) {
		t.Fatalf("SetSecret(existing) = %+v, created %v, %v; want replaced, created_at kept", again, created, err)
	}
	if _, _, err := cp.SetSecret(ctx, "B", "v"); err != nil {
		t.Fatal(err)
	}
	list, err := cp.ListSecrets(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "API_KEY" || list[1].Name != "B" {
		t.Fatalf("ListSecrets = %+v, %v; want API_KEY, B", list, err)
	}
	if err := cp.DeleteSecret(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	if err := cp.DeleteSecret(ctx, "B"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("DeleteSecret twice = %v; want ErrNotFound", err)
	}

	// Names are escaped in the path: a hostile one reaches the server
	// whole, and is refused there.
	for _, name := range []string{"../tokens", "a/b", "A B", "x?y=1", ""} {
		if _, _, err := cp.SetSecret(ctx, name, "v"); !errors.Is(err, client.ErrInvalid) && !errors.Is(err, client.ErrNotFound) {
			t.Errorf("SetSecret(%q) = %v; want ErrInvalid (or ErrNotFound for no name)", name, err)
		}
	}
	_, _, err = cp.SetSecret(ctx, "K", strings.Repeat("v", 64<<10+1))
	if !errors.Is(err, client.ErrInvalid) || strings.Contains(err.Error(), "vvvv") {
		t.Errorf("SetSecret(over 64 KiB) = %v; want ErrInvalid without the value", err)
	}
	if list, _ := cp.ListSecrets(ctx); len(list) != 1 {
		t.Errorf("after refused sets, ListSecrets = %+v; want API_KEY only", list)
	}

	other, err := cp.CreateToken(ctx, cpapi.TokenRequest{Name: "o", Tenant: "other"})
	if err != nil {
		t.Fatal(err)
	}
	ocp := newCP(t, srv, other.Secret)
	if err := ocp.DeleteSecret(ctx, "API_KEY"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("another tenant's DeleteSecret = %v; want ErrNotFound", err)
	}
	if list, err := ocp.ListSecrets(ctx); err != nil || len(list) != 0 {
		t.Errorf("another tenant's ListSecrets = %+v, %v; want none", list, err)
	}
	if _, _, err := newCP(t, srv, "crl_bad").SetSecret(ctx, "K", "v"); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("SetSecret with a bad token = %v; want ErrUnauthorized", err)
	}
}
