package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/store"
)

// Create makes a sandbox for tenantID and returns it running.
//
// Order, for crash safety: the record is written first ("creating"; the
// tenant's max_sandboxes is enforced there, ErrRateLimited), then the
// runtime creates the sandbox under the record's id, then the record
// becomes "running" with its deadline. A request without env takes a warm
// sandbox when its runtime's pool has one ready (sandboxd takes env only
// at start, so a request with env is always created cold); the warm
// sandbox's record then replaces the placeholder. On failure the record is
// removed and the runtime's error returned, wrapped.
func (s *Service) Create(ctx context.Context, tenantID string, req cpapi.SandboxRequest, opts CreateOptions) (*cpapi.Sandbox, error) {
	p, err := s.plan(req, opts)
	if err != nil {
		return nil, err
	}
	rec, err := s.store.CreateSandbox(ctx, store.Sandbox{
		ID: runtime.NewID(), TenantID: tenantID, Runtime: p.runtimeName, Template: p.spec.Template,
		Status: StatusCreating, Spec: p.stored, Labels: p.spec.Labels,
	})
	if err != nil {
		return nil, fmt.Errorf("record sandbox: %w", err)
	}
	s.setInflight(rec.ID, true)
	defer s.setInflight(rec.ID, false)

	sb, err := s.start(ctx, p, rec.ID)
	if err != nil {
		// Backends leave nothing behind a failed create; deleting is
		// idempotent and makes sure of it (a cancelled ctx, say).
		s.discard(p.rt, rec.ID)
		s.dropRecord(tenantID, rec.ID)
		return nil, fmt.Errorf("create sandbox %s in runtime %s: %w", rec.ID, p.runtimeName, err)
	}
	if sb.ID != rec.ID {
		s.setInflight(sb.ID, true)
		defer s.setInflight(sb.ID, false)
		rec, err = s.adopt(ctx, rec, sb.ID, p)
	} else {
		rec, err = s.finish(ctx, rec, p)
	}
	if err != nil {
		s.discard(p.rt, sb.ID)
		return nil, err
	}
	s.remember(rec, sb)
	s.log.Info("sandbox created", "id", rec.ID, "tenant", tenantID, "runtime", rec.Runtime, "template", rec.Template)
	return view(rec), nil
}

// start has the runtime (or its pool) create the sandbox. A warm sandbox
// comes with its own id; a cold one gets id.
func (s *Service) start(ctx context.Context, p *plan, id string) (*runtime.Sandbox, error) {
	spec := p.spec
	if pl := s.pools[p.runtimeName]; pl != nil && len(spec.Env) == 0 && pl.Ready(pool.KeyOf(spec)) > 0 {
		c, err := pl.Claim(ctx, spec) // spec.ID is "": a warm claim
		if err != nil {
			return nil, err
		}
		return c.Sandbox, nil
	}
	spec.ID = id
	return p.rt.Create(ctx, spec)
}

// deadline is when a sandbox created or extended now with timeout ends;
// zero for no timeout.
func (s *Service) deadline(timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return time.Unix(0, s.now().Add(timeout).UnixNano()).UTC()
}

// finish marks the record of a cold sandbox running, with its deadline.
func (s *Service) finish(ctx context.Context, rec *store.Sandbox, p *plan) (*store.Sandbox, error) {
	exp := s.deadline(p.timeout)
	err := s.store.SetSandboxExpiry(ctx, rec.TenantID, rec.ID, exp)
	if err == nil {
		err = s.store.UpdateSandboxStatus(ctx, rec.TenantID, rec.ID, StatusRunning)
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errdefs.Conflictf("sandbox %s was deleted while it was being created", rec.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("record sandbox %s as running: %w", rec.ID, err)
	}
	out := *rec
	out.Status, out.ExpiresAt = StatusRunning, exp
	return &out, nil
}

// adopt replaces the placeholder record by the record of the warm sandbox
// id. A crash in between leaves the warm sandbox without a record; it is
// labelled corral.pool, and Reconcile deletes it as an orphan.
func (s *Service) adopt(ctx context.Context, placeholder *store.Sandbox, id string, p *plan) (*store.Sandbox, error) {
	err := s.store.DeleteSandbox(ctx, placeholder.TenantID, placeholder.ID)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errdefs.Conflictf("sandbox %s was deleted while it was being created", placeholder.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("replace record %s: %w", placeholder.ID, err)
	}
	rec, err := s.store.CreateSandbox(ctx, store.Sandbox{
		ID: id, TenantID: placeholder.TenantID, Runtime: placeholder.Runtime, Template: placeholder.Template,
		Status: StatusRunning, Spec: p.stored, Labels: placeholder.Labels, ExpiresAt: s.deadline(p.timeout),
	})
	if err != nil {
		return nil, fmt.Errorf("record warm sandbox %s: %w", id, err)
	}
	return rec, nil
}

// remember primes the lookup cache with a sandbox just created, so the
// first proxied request does not ask the runtime.
func (s *Service) remember(rec *store.Sandbox, sb *runtime.Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[rec.ID] = &conn{tenant: rec.TenantID, endpoint: sb.Endpoint, token: sb.Token, fetched: s.now()}
}

// cleanupContext outlives the caller's context, which may be why we are
// cleaning up.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupTimeout)
}

// dropRecord removes a record whose sandbox could not be made.
func (s *Service) dropRecord(tenantID, id string) {
	ctx, cancel := cleanupContext()
	defer cancel()
	if err := s.store.DeleteSandbox(ctx, tenantID, id); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		s.log.Warn("sandboxes: removing the record of a failed create failed; Reconcile will", "id", id, "err", err)
	}
}

// discard deletes a sandbox that will not be handed out.
func (s *Service) discard(rt runtime.Runtime, id string) {
	ctx, cancel := cleanupContext()
	defer cancel()
	if err := rt.Delete(ctx, id); err != nil {
		s.log.Warn("sandboxes: deleting a sandbox after a failed create failed; Reconcile will", "id", id, "err", err)
	}
}
