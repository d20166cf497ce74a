package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

func testTenantIsolation(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	a := storetest.Tenant(t, s, "a", 0)
	o := storetest.Tenant(t, s, "other", 0)
	job := storetest.Job(t, s, a.ID)
	sb, err := s.CreateSandbox(ctx, store.Sandbox{TenantID: a.ID, Runtime: "docker", Status: "running"})
	must(t, "CreateSandbox", err)
	tok, err := s.CreateToken(ctx, store.Token{TenantID: a.ID, Hash: hash("t")})
	must(t, "CreateToken", err)

	_, err = s.GetJob(ctx, o.ID, job.ID)
	wantClass(t, "GetJob(other tenant)", err, errdefs.ErrNotFound)
	_, err = s.GetSandbox(ctx, o.ID, sb.ID)
	wantClass(t, "GetSandbox(other tenant)", err, errdefs.ErrNotFound)
	wantClass(t, "RevokeToken(other tenant)", s.RevokeToken(ctx, o.ID, tok.ID), errdefs.ErrNotFound)
	wantClass(t, "UpdateSandboxStatus(other tenant)", s.UpdateSandboxStatus(ctx, o.ID, sb.ID, "stopped"), errdefs.ErrNotFound)
	wantClass(t, "TouchSandbox(other tenant)", s.TouchSandbox(ctx, o.ID, sb.ID), errdefs.ErrNotFound)
	wantClass(t, "SetSandboxExpiry(other tenant)", s.SetSandboxExpiry(ctx, o.ID, sb.ID, time.Now()), errdefs.ErrNotFound)
	wantClass(t, "DeleteSandbox(other tenant)", s.DeleteSandbox(ctx, o.ID, sb.ID), errdefs.ErrNotFound)
	_, err = s.AppendTenantEvents(ctx, o.ID, job.ID, []store.EventInput{{Type: "message"}})
	wantClass(t, "AppendTenantEvents(other tenant)", err, errdefs.ErrNotFound)

	jobs, _, err := s.ListJobs(ctx, o.ID, store.JobFilter{})
	if err != nil || len(jobs) != 0 {
		t.Errorf("ListJobs(other tenant) = %d jobs, %v; want none", len(jobs), err)
	}
	sbs, err := s.ListSandboxes(ctx, o.ID)
	if err != nil || len(sbs) != 0 {
		t.Errorf("ListSandboxes(other tenant) = %d, %v; want none", len(sbs), err)
	}
	toks, err := s.ListTokens(ctx, o.ID)
	if err != nil || len(toks) != 0 {
		t.Errorf("ListTokens(other tenant) = %d, %v; want none", len(toks), err)
	}
	if n, err := s.CountActiveJobs(ctx, o.ID); err != nil || n != 0 {
		t.Errorf("CountActiveJobs(other tenant) = %d, %v; want 0", n, err)
	}

	// Nothing above changed tenant a's things.
	if _, err := s.GetJob(ctx, a.ID, job.ID); err != nil {
		t.Errorf("GetJob(own) = %v", err)
	}
	if got, err := s.GetSandbox(ctx, a.ID, sb.ID); err != nil || got.Status != "running" {
		t.Errorf("GetSandbox(own) = %+v, %v; want running", got, err)
	}
	if _, err := s.TokenByHash(ctx, hash("t")); err != nil {
		t.Errorf("TokenByHash(own, after other tenant's revoke) = %v", err)
	}
	if evs, err := s.EventsAfter(ctx, job.ID, 0, 0); err != nil || len(evs) != 1 {
		t.Errorf("EventsAfter = %d events, %v; want only the creation event", len(evs), err)
	}
}

func testCreateJob(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	exit := 0
	j, err := s.CreateJob(ctx, store.Job{TenantID: tn.ID, Spec: json.RawMessage(`{"task":"build","agent":"script"}`),
		Runtime: "docker", Labels: map[string]string{"team": "x"}, Status: store.JobRunning, Attempts: 7,
		Result: &store.JobResult{Summary: "none yet", ExitCode: &exit}})
	must(t, "CreateJob", err)
	if !strings.HasPrefix(j.ID, "job_") || j.Status != store.JobPending || j.Attempts != 0 || j.NextSeq != 2 {
		t.Errorf("CreateJob = %+v; want a pending job_ id, 0 attempts, next seq 2", j)
	}
	got, err := s.GetJob(ctx, tn.ID, j.ID)
	must(t, "GetJob", err)
	if string(got.Spec) != `{"task":"build","agent":"script"}` || got.Runtime != "docker" || got.Labels["team"] != "x" ||
		!got.CreatedAt.Equal(j.CreatedAt) || got.Result == nil || *got.Result.ExitCode != 0 || !got.StartedAt.IsZero() {
		t.Errorf("GetJob = %+v; want %+v", got, j)
	}
	evs, err := s.EventsAfter(ctx, j.ID, 0, 0)
	must(t, "EventsAfter", err)
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Type != store.EventJobState || string(evs[0].Data) != `{"from":"","to":"pending"}` {
		t.Errorf("events of a new job = %+v; want one job.state to pending", evs)
	}
	if _, err := s.LoadJob(ctx, j.ID); err != nil {
		t.Errorf("LoadJob = %v", err)
	}

	bad := []struct {
		name string
		job  store.Job
		want error
	}{
		{"no tenant", store.Job{}, errdefs.ErrInvalid},
		{"unknown tenant", store.Job{TenantID: "tn_missing"}, errdefs.ErrNotFound},
		{"spec not JSON", store.Job{TenantID: tn.ID, Spec: json.RawMessage(`{`)}, errdefs.ErrInvalid},
		{"spec not an object", store.Job{TenantID: tn.ID, Spec: json.RawMessage(`[1]`)}, errdefs.ErrInvalid},
		{"spec null", store.Job{TenantID: tn.ID, Spec: json.RawMessage(`null`)}, errdefs.ErrInvalid},
		{"spec too large", store.Job{TenantID: tn.ID, Spec: json.RawMessage(`{"a":"` + strings.Repeat("x", 1<<20) + `"}`)}, errdefs.ErrTooLarge},
		{"bad id", store.Job{ID: "../x", TenantID: tn.ID}, errdefs.ErrInvalid},
		{"duplicate id", store.Job{ID: j.ID, TenantID: tn.ID}, errdefs.ErrConflict},
		{"empty label key", store.Job{TenantID: tn.ID, Labels: map[string]string{"": "x"}}, errdefs.ErrInvalid},
	}
	for _, tt := range bad {
		_, err := s.CreateJob(ctx, tt.job)
		wantClass(t, "CreateJob("+tt.name+")", err, tt.want)
	}
	_, err = s.GetJob(ctx, tn.ID, "job_missing")
	wantClass(t, "GetJob(missing)", err, errdefs.ErrNotFound)
	_, err = s.LoadJob(ctx, "job_missing")
	wantClass(t, "LoadJob(missing)", err, errdefs.ErrNotFound)
	wantClass(t, "SetJobSandbox(missing)", s.SetJobSandbox(ctx, "job_missing", "docker", "sb_x"), errdefs.ErrNotFound)
	must(t, "SetJobSandbox", s.SetJobSandbox(ctx, j.ID, "bwrap", "sb_1"))
	must(t, "SetJobResult", s.SetJobResult(ctx, j.ID, store.JobResult{Summary: "ok", Branch: "corral/x"}))
	got, err = s.GetJob(ctx, tn.ID, j.ID)
	must(t, "GetJob", err)
	if got.Runtime != "bwrap" || got.SandboxID != "sb_1" || got.Result.Summary != "ok" || got.Result.Branch != "corral/x" {
		t.Errorf("after SetJobSandbox/SetJobResult: %+v", got)
	}
}

func testTransitionCAS(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	j := storetest.Job(t, s, tn.ID)

	j2, err := s.TransitionJob(ctx, j.ID, store.JobPending, store.JobCreating, "", func(j *store.Job) {
		j.SandboxID, j.Runtime = "sb_abc", "docker"
	})
	must(t, "TransitionJob(pending→creating)", err)
	if j2.Status != store.JobCreating || j2.SandboxID != "sb_abc" || j2.NextSeq != 3 {
		t.Errorf("TransitionJob = %+v; want creating in sb_abc, next seq 3", j2)
	}

	// A failed compare-and-set changes nothing and appends nothing.
	_, err = s.TransitionJob(ctx, j.ID, store.JobPending, store.JobCancelled, "user", nil)
	wantClass(t, "TransitionJob(stale from)", err, errdefs.ErrConflict)
	_, err = s.TransitionJob(ctx, j.ID, store.JobCreating, store.JobCompleted, "", nil)
	wantClass(t, "TransitionJob(creating→completed)", err, errdefs.ErrInvalid)
	_, err = s.TransitionJob(ctx, j.ID, store.JobCreating, store.JobRunning, "", func(j *store.Job) { j.Status = store.JobCompleted })
	wantClass(t, "TransitionJob(mutate changes status)", err, errdefs.ErrInvalid)
	_, err = s.TransitionJob(ctx, j.ID, store.JobCreating, store.JobRunning, "", func(j *store.Job) { j.Labels = map[string]string{"": ""} })
	wantClass(t, "TransitionJob(mutate sets a bad label)", err, errdefs.ErrInvalid)
	_, err = s.TransitionJob(ctx, "job_missing", store.JobPending, store.JobCreating, "", nil)
	wantClass(t, "TransitionJob(missing)", err, errdefs.ErrNotFound)
	_, err = s.TransitionJob(ctx, j.ID, "sleeping", store.JobRunning, "", nil)
	wantClass(t, "TransitionJob(unknown status)", err, errdefs.ErrInvalid)
	got, err := s.GetJob(ctx, tn.ID, j.ID)
	must(t, "GetJob", err)
	if got.Status != store.JobCreating || got.NextSeq != 3 || len(got.Labels) != 0 {
		t.Errorf("after failed transitions: %+v; want creating, next seq 3", got)
	}
	evs, err := s.EventsAfter(ctx, j.ID, 0, 0)
	must(t, "EventsAfter", err)
	if len(evs) != 2 || string(evs[1].Data) != `{"from":"pending","to":"creating"}` {
		t.Fatalf("events = %+v; want creation + pending→creating", evs)
	}

	run, err := s.TransitionJob(ctx, j.ID, store.JobCreating, store.JobRunning, "", nil)
	must(t, "TransitionJob(creating→running)", err)
	if run.StartedAt.IsZero() || !run.FinishedAt.IsZero() {
		t.Errorf("running job: started %v finished %v; want started only", run.StartedAt, run.FinishedAt)
	}
	exit := 1
	fail, err := s.TransitionJob(ctx, j.ID, store.JobRunning, store.JobFailed, "agent_error", func(j *store.Job) {
		j.Result = &store.JobResult{Summary: "boom", ExitCode: &exit}
	})
	must(t, "TransitionJob(running→failed)", err)
	got, err = s.GetJob(ctx, tn.ID, j.ID)
	must(t, "GetJob", err)
	if got.Status != store.JobFailed || got.StatusReason != "agent_error" || got.FinishedAt.IsZero() ||
		!got.FinishedAt.Equal(fail.FinishedAt) || !got.StartedAt.Equal(run.StartedAt) || *got.Result.ExitCode != 1 {
		t.Errorf("failed job = %+v; want failed/agent_error with times and result", got)
	}
	evs, err = s.EventsAfter(ctx, j.ID, 2, 0)
	must(t, "EventsAfter", err)
	if len(evs) != 2 || evs[1].Seq != 4 || string(evs[1].Data) != `{"from":"running","to":"failed","reason":"agent_error"}` {
		t.Errorf("events after 2 = %+v; want running, failed", evs)
	}
	_, err = s.TransitionJob(ctx, j.ID, store.JobFailed, store.JobCancelled, "", nil)
	wantClass(t, "TransitionJob(from final)", err, errdefs.ErrInvalid)
}

// testTransitionConcurrent races transitions out of one state: exactly one
// wins, and the log has exactly one event for it.
func testTransitionConcurrent(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	for round := range 5 {
		j := storetest.Job(t, s, tn.ID)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for i := range 10 {
			to := store.JobCreating
			if i%2 == 1 {
				to = store.JobCancelled
			}
			wg.Go(func() {
				_, err := s.TransitionJob(ctx, j.ID, store.JobPending, to, "", nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errorsIs(err, errdefs.ErrConflict):
					conflicts++
				default:
					t.Errorf("TransitionJob = %v", err)
				}
			})
		}
		wg.Wait()
		evs, err := s.EventsAfter(ctx, j.ID, 0, 0)
		must(t, "EventsAfter", err)
		if wins != 1 || conflicts != 9 || len(evs) != 2 {
			t.Errorf("round %d: %d wins, %d conflicts, %d events; want 1, 9, 2", round, wins, conflicts, len(evs))
		}
	}
}
