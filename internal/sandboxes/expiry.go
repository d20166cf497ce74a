package sandboxes

import (
	"context"
	"errors"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// Run deletes expired sandboxes every SweepEvery until ctx ends: those past
// their deadline (expires_at), those idle for IdleTimeout (no request or
// connection; jobs' sandboxes, labelled corral.job, are exempt), and
// records left "creating" for longer than any create takes. It returns
// ctx's error.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := s.sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("sandboxes: expiry pass failed", "err", err)
			}
		}
	}
}

// sweep is one pass of Run.
func (s *Service) sweep(ctx context.Context) error {
	recs, err := s.store.ListAllSandboxes(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	var held []*store.Sandbox
	for _, rec := range recs {
		reason, open := s.expired(rec, now)
		if open {
			held = append(held, rec)
		}
		if reason == "" {
			continue
		}
		if err := s.remove(ctx, rec); err != nil {
			s.log.Warn("sandboxes: deleting an expired sandbox failed", "id", rec.ID, "reason", reason, "err", err)
			continue
		}
		s.log.Info("sandbox expired", "id", rec.ID, "tenant", rec.TenantID, "reason", reason)
	}
	// Open connections are activity other replicas must see too.
	for _, rec := range held {
		if err := s.store.TouchSandbox(ctx, rec.TenantID, rec.ID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			s.log.Warn("sandboxes: recording activity failed", "id", rec.ID, "err", err)
		}
	}
	s.prune(recs)
	return nil
}

// expired says why rec should be deleted now ("" to keep it), and whether
// this process has a request or connection open on it.
func (s *Service) expired(rec *store.Sandbox, now time.Time) (reason string, open bool) {
	s.mu.Lock()
	_, creating := s.inflight[rec.ID]
	last, open := rec.LastActiveAt, false
	if a := s.active[rec.ID]; a != nil {
		open = a.open > 0
		if a.last.After(last) {
			last = a.last
		}
	}
	s.mu.Unlock()
	switch {
	case creating:
		return "", open
	case rec.Status == StatusCreating:
		if now.Sub(rec.CreatedAt) > staleCreating {
			return "stuck creating", open
		}
		return "", open
	case !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt):
		return "timeout", open
	case rec.Labels[LabelJob] == "" && !open && now.Sub(last) >= s.idleTimeout:
		return "idle", open
	}
	return "", open
}

// prune drops the activity of sandboxes that have no record any more
// (deleted by another replica) and nothing open.
func (s *Service) prune(recs []*store.Sandbox) {
	ids := make(map[string]bool, len(recs))
	for _, rec := range recs {
		ids[rec.ID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, a := range s.active {
		if !ids[id] && a.open == 0 {
			delete(s.active, id)
		}
	}
}
