package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// Get returns the tenant's sandbox id; another tenant's is ErrNotFound.
func (s *Service) Get(ctx context.Context, tenantID, id string) (*cpapi.Sandbox, error) {
	rec, err := s.store.GetSandbox(ctx, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("get sandbox: %w", err)
	}
	return view(rec), nil
}

// List returns the tenant's sandboxes, oldest first.
func (s *Service) List(ctx context.Context, tenantID string) (*cpapi.SandboxList, error) {
	recs, err := s.store.ListSandboxes(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	list := &cpapi.SandboxList{Sandboxes: make([]cpapi.Sandbox, 0, len(recs))}
	for _, rec := range recs {
		list.Sandboxes = append(list.Sandboxes, *view(rec))
	}
	return list, nil
}

// Delete removes the tenant's sandbox id: from the runtime first (which is
// idempotent, so a retry after a failure finishes the job), then its
// record. A sandbox still being created is deleted too; its Create fails.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	rec, err := s.store.GetSandbox(ctx, tenantID, id)
	if err != nil {
		return fmt.Errorf("delete sandbox: %w", err)
	}
	return s.remove(ctx, rec)
}

// remove deletes rec's sandbox and then rec.
func (s *Service) remove(ctx context.Context, rec *store.Sandbox) error {
	rt, err := s.runtime(rec)
	if err != nil {
		return err
	}
	if err := rt.Delete(ctx, rec.ID); err != nil {
		return fmt.Errorf("delete sandbox %s from runtime %s: %w", rec.ID, rec.Runtime, err)
	}
	if err := s.store.DeleteSandbox(ctx, rec.TenantID, rec.ID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return fmt.Errorf("delete record of sandbox %s: %w", rec.ID, err)
	}
	s.forget(rec.ID)
	return nil
}

// runtime returns the backend rec lives on.
func (s *Service) runtime(rec *store.Sandbox) (runtime.Runtime, error) {
	rt := s.runtimes[rec.Runtime]
	if rt == nil {
		return nil, errdefs.Unavailablef("sandbox %s is on runtime %q, which is not configured here", rec.ID, rec.Runtime)
	}
	return rt, nil
}

// Extend makes the tenant's sandbox id live timeoutS seconds from now
// (1 to MaxTimeout), whatever its deadline was, and returns it.
func (s *Service) Extend(ctx context.Context, tenantID, id string, timeoutS int64) (*cpapi.Sandbox, error) {
	if limit := int64(s.maxTimeout / time.Second); timeoutS < 1 || timeoutS > limit {
		return nil, errdefs.Invalidf("timeout_s %d must be from 1 to %d", timeoutS, limit)
	}
	rec, err := s.store.GetSandbox(ctx, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("extend sandbox: %w", err)
	}
	at := s.deadline(time.Duration(timeoutS) * time.Second)
	if err := s.store.SetSandboxExpiry(ctx, tenantID, id, at); err != nil {
		return nil, fmt.Errorf("extend sandbox: %w", err)
	}
	rec.ExpiresAt = at
	return view(rec), nil
}
