package store_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

func testSandboxes(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, url := storetest.Fresh(t, b)
	clock := &stepClock{t: time.Now().UTC(), step: time.Millisecond}
	s.SetClock(clock.now)
	a := storetest.Tenant(t, s, "a", 0)
	limited, err := s.CreateTenant(ctx, store.Tenant{Name: "limited", MaxSandboxes: 2})
	must(t, "CreateTenant", err)

	exp := time.Now().Add(time.Hour).UTC()
	sb, err := s.CreateSandbox(ctx, store.Sandbox{ID: "sb_one", TenantID: a.ID, Runtime: "docker", Template: "default",
		Status: "running", Spec: json.RawMessage(`{"template":"default"}`), Labels: map[string]string{"k": "v"}, ExpiresAt: exp})
	must(t, "CreateSandbox", err)
	got, err := s.GetSandbox(ctx, a.ID, "sb_one")
	must(t, "GetSandbox", err)
	if got.Runtime != "docker" || got.Template != "default" || got.Status != "running" || got.Labels["k"] != "v" ||
		string(got.Spec) != `{"template":"default"}` || !got.ExpiresAt.Equal(sb.ExpiresAt) || !got.CreatedAt.Equal(sb.CreatedAt) ||
		!got.LastActiveAt.Equal(sb.CreatedAt) {
		t.Errorf("GetSandbox = %+v; want %+v", got, sb)
	}
	sb2, err := s.CreateSandbox(ctx, store.Sandbox{TenantID: a.ID, Runtime: "bwrap", Status: "creating"})
	must(t, "CreateSandbox(generated id)", err)

	must(t, "UpdateSandboxStatus", s.UpdateSandboxStatus(ctx, a.ID, sb2.ID, "running"))
	clock.setStep(2 * time.Second)
	must(t, "TouchSandbox", s.TouchSandbox(ctx, a.ID, "sb_one"))
	must(t, "SetSandboxExpiry", s.SetSandboxExpiry(ctx, a.ID, "sb_one", time.Time{}))
	got, err = s.GetSandbox(ctx, a.ID, "sb_one")
	must(t, "GetSandbox", err)
	if !got.LastActiveAt.After(sb.LastActiveAt) || !got.ExpiresAt.IsZero() {
		t.Errorf("after touch and expiry: active %v (was %v), expires %v; want later, zero", got.LastActiveAt, sb.LastActiveAt, got.ExpiresAt)
	}

	list, err := s.ListSandboxes(ctx, a.ID)
	if err != nil || len(list) != 2 || list[0].ID != "sb_one" || list[1].Status != "running" {
		t.Errorf("ListSandboxes = %v, %v; want sb_one, %s (running)", list, err, sb2.ID)
	}

	// max_sandboxes holds under concurrent creates from two Stores.
	s2 := storetest.Open(t, url)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, limitedOut := 0, 0
	for i := range 6 {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			_, err := st.CreateSandbox(ctx, store.Sandbox{TenantID: limited.ID, Runtime: "docker", Status: "running"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errorsIs(err, errdefs.ErrRateLimited):
				limitedOut++
			default:
				t.Errorf("CreateSandbox(limited) = %v", err)
			}
		})
	}
	wg.Wait()
	if created != 2 || limitedOut != 4 {
		t.Errorf("limited tenant: %d created, %d refused; want 2, 4", created, limitedOut)
	}

	all, err := s.ListAllSandboxes(ctx)
	if err != nil || len(all) != 4 {
		t.Errorf("ListAllSandboxes = %d, %v; want 4", len(all), err)
	}
	must(t, "DeleteSandbox", s.DeleteSandbox(ctx, a.ID, "sb_one"))
	wantClass(t, "DeleteSandbox(again)", s.DeleteSandbox(ctx, a.ID, "sb_one"), errdefs.ErrNotFound)
	_, err = s.GetSandbox(ctx, a.ID, "sb_one")
	wantClass(t, "GetSandbox(deleted)", err, errdefs.ErrNotFound)

	bad := []struct {
		name string
		sb   store.Sandbox
		want error
	}{
		{"duplicate id", store.Sandbox{ID: sb2.ID, TenantID: a.ID, Runtime: "docker", Status: "running"}, errdefs.ErrConflict},
		{"no tenant", store.Sandbox{Runtime: "docker", Status: "running"}, errdefs.ErrInvalid},
		{"unknown tenant", store.Sandbox{TenantID: "tn_missing", Runtime: "docker", Status: "running"}, errdefs.ErrNotFound},
		{"no runtime", store.Sandbox{TenantID: a.ID, Status: "running"}, errdefs.ErrInvalid},
		{"no status", store.Sandbox{TenantID: a.ID, Runtime: "docker"}, errdefs.ErrInvalid},
		{"bad id", store.Sandbox{ID: "SB 1", TenantID: a.ID, Runtime: "docker", Status: "running"}, errdefs.ErrInvalid},
		{"spec not object", store.Sandbox{TenantID: a.ID, Runtime: "docker", Status: "running", Spec: json.RawMessage(`"x"`)}, errdefs.ErrInvalid},
	}
	for _, tt := range bad {
		_, err := s.CreateSandbox(ctx, tt.sb)
		wantClass(t, "CreateSandbox("+tt.name+")", err, tt.want)
	}
	wantClass(t, "UpdateSandboxStatus(empty)", s.UpdateSandboxStatus(ctx, a.ID, sb2.ID, ""), errdefs.ErrInvalid)
	wantClass(t, "UpdateSandboxStatus(missing)", s.UpdateSandboxStatus(ctx, a.ID, "sb_missing", "x"), errdefs.ErrNotFound)
	wantClass(t, "TouchSandbox(missing)", s.TouchSandbox(ctx, a.ID, "sb_missing"), errdefs.ErrNotFound)
}
