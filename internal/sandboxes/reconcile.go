package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/store"
)

// Report is what Reconcile found and did.
type Report struct {
	// Lost are records whose sandbox was gone (or stopped) at its runtime;
	// the records were deleted. A job whose sandbox is among them failed
	// with sandbox_lost.
	Lost []Lost
	// Orphans are runtime sandboxes that had no record (warm-pool
	// leftovers included); they were deleted from their runtime.
	Orphans []string
	// Stuck are records left "creating" by a create that never finished;
	// their sandbox (if any) and the records were deleted.
	Stuck []string
}

// Lost is a sandbox whose record outlived it.
type Lost struct {
	ID       string
	TenantID string
	JobID    string // its corral.job label; "" when not a job's sandbox
}

// Reconcile brings records and runtimes back in line after a restart by
// comparing the store's records with every runtime's List. Records whose
// sandbox is gone are deleted (Report.Lost), runtime sandboxes with no
// record are deleted (Report.Orphans), and records stuck in "creating" are
// deleted with their sandbox (Report.Stuck). Sandboxes this process is
// creating right now are left alone. A runtime that cannot be listed is
// skipped, its records untouched, and its error returned with the others
// after the whole pass.
//
// Run it before warming pools: an unclaimed warm sandbox has no record.
func (s *Service) Reconcile(ctx context.Context) (Report, error) {
	var rep Report
	recs, err := s.store.ListAllSandboxes(ctx)
	if err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	var errs []error
	for _, name := range s.names {
		rt := s.runtimes[name]
		live, err := rt.List(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile: list runtime %s: %w", name, err))
			continue
		}
		errs = append(errs, s.reconcileRuntime(ctx, name, rt, recordsOf(recs, name), live, &rep)...)
	}
	for _, rec := range recs {
		if s.runtimes[rec.Runtime] == nil {
			s.log.Warn("sandboxes: reconcile: record on a runtime that is not configured; left alone",
				"id", rec.ID, "runtime", rec.Runtime)
		}
	}
	if len(rep.Lost)+len(rep.Orphans)+len(rep.Stuck) > 0 {
		s.log.Info("sandboxes reconciled", "lost", len(rep.Lost), "orphans", rep.Orphans, "stuck", rep.Stuck)
	}
	return rep, errors.Join(errs...)
}

func recordsOf(recs []*store.Sandbox, runtimeName string) []*store.Sandbox {
	return slices.DeleteFunc(slices.Clone(recs), func(r *store.Sandbox) bool { return r.Runtime != runtimeName })
}

// reconcileRuntime reconciles one runtime's records with its sandboxes.
func (s *Service) reconcileRuntime(ctx context.Context, name string, rt runtime.Runtime,
	recs []*store.Sandbox, live []*runtime.Sandbox, rep *Report) []error {
	var errs []error
	fail := func(what, id string, err error) {
		errs = append(errs, fmt.Errorf("reconcile %s: %s %s: %w", name, what, id, err))
	}
	byID := make(map[string]*runtime.Sandbox, len(live))
	for _, sb := range live {
		byID[sb.ID] = sb
	}
	recorded := make(map[string]bool, len(recs))
	for _, rec := range recs {
		recorded[rec.ID] = true
		if s.creating(rec.ID) {
			continue
		}
		sb := byID[rec.ID]
		switch {
		case rec.Status == StatusCreating:
			if cur, err := s.store.GetSandbox(ctx, rec.TenantID, rec.ID); err != nil || cur.Status != StatusCreating {
				continue // finished or deleted since it was listed
			}
			if err := s.remove(ctx, rec); err != nil {
				fail("delete stuck sandbox", rec.ID, err)
				continue
			}
			rep.Stuck = append(rep.Stuck, rec.ID)
		case sb != nil && sb.Status == runtime.StatusUnknown:
			// The engine could not tell (a busy containerd shim): a live
			// sandbox must not be deleted on a guess; the next pass sees.
			s.log.Warn("sandboxes: reconcile: the runtime cannot tell whether the sandbox runs; left alone",
				"id", rec.ID, "runtime", name)
		case sb == nil || sb.Status != runtime.StatusRunning:
			var err error
			if sb != nil { // stopped: the engine still has its remains
				err = rt.Delete(ctx, rec.ID)
			}
			if err == nil {
				err = s.store.DeleteSandbox(ctx, rec.TenantID, rec.ID)
			}
			if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				fail("delete lost sandbox", rec.ID, err)
				continue
			}
			s.forget(rec.ID)
			rep.Lost = append(rep.Lost, Lost{ID: rec.ID, TenantID: rec.TenantID, JobID: rec.Labels[LabelJob]})
		}
	}
	var orphans []*runtime.Sandbox
	for _, sb := range live {
		if !recorded[sb.ID] && !s.creating(sb.ID) {
			orphans = append(orphans, sb)
		}
	}
	if len(orphans) > 0 {
		// A create may have finished since the records were listed.
		now, err := s.store.ListAllSandboxes(ctx)
		if err != nil {
			return append(errs, fmt.Errorf("reconcile %s: %w", name, err))
		}
		for _, rec := range now {
			recorded[rec.ID] = true
		}
	}
	for _, sb := range orphans {
		if recorded[sb.ID] {
			continue
		}
		if err := rt.Delete(ctx, sb.ID); err != nil {
			fail("delete orphan", sb.ID, err)
			continue
		}
		s.forget(sb.ID)
		rep.Orphans = append(rep.Orphans, sb.ID)
	}
	return errs
}

// creating reports whether this process is creating sandbox id right now.
func (s *Service) creating(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[id]
	return ok
}
