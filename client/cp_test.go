package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

// newCP is an SDK client for srv bearing token.
func newCP(t *testing.T, srv *controlplanetest.Server, token string, opts ...client.Option) *client.ControlPlane {
	t.Helper()
	cp, err := client.NewControlPlane(srv.URL, append([]client.Option{client.WithToken(token)}, opts...)...)
	if err != nil {
		t.Fatalf("NewControlPlane(%q): %v", srv.URL, err)
	}
	return cp
}

// scriptJob submits an agent=script job running command.
func scriptJob(ctx context.Context, t *testing.T, cp *client.ControlPlane, srv *controlplanetest.Server, command string) *cpapi.Job {
	t.Helper()
	j, err := cp.CreateJob(ctx, cpapi.JobRequest{Task: "test: " + command, Agent: cpapi.AgentScript, Command: command, Template: srv.Template})
	if err != nil {
		t.Fatalf("CreateJob(%q): %v", command, err)
	}
	return j
}

// allEvents follows a job's events to the end.
func allEvents(ctx context.Context, t *testing.T, cp *client.ControlPlane, id string) []cpapi.Event {
	t.Helper()
	st, err := cp.JobEvents(ctx, id, 0)
	if err != nil {
		t.Fatalf("JobEvents(%s): %v", id, err)
	}
	defer st.Close()
	var evs []cpapi.Event
	for {
		e, err := st.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("JobEvents(%s).Next after %d events: %v", id, len(evs), err)
		}
		evs = append(evs, e)
	}
}

// output is the process output the events carry.
func output(t *testing.T, evs []cpapi.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.Type != cpapi.EventProcessOutput {
			continue
		}
		var d cpapi.OutputData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("event %d: %v", e.Seq, err)
		}
		b.WriteString(d.Data)
	}
	return b.String()
}

// checkSeqs fails unless evs are numbered 1, 2, 3, ... and end with the
// final state.
func checkSeqs(t *testing.T, evs []cpapi.Event) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d; want %d (a gap or a duplicate)", i, e.Seq, i+1)
		}
	}
	if len(evs) == 0 || !client.FinalEvent(evs[len(evs)-1]) {
		t.Fatalf("the events do not end with the final state: %+v", evs)
	}
}

func TestControlPlaneJobs(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, 3*time.Minute)

	ok := scriptJob(ctx, t, cp, srv, "echo hi; echo there >&2")
	if ok.Status != cpapi.JobPending || ok.Agent != cpapi.AgentScript {
		t.Errorf("CreateJob = %+v; want a pending script job", ok)
	}
	evs := allEvents(ctx, t, cp, ok.ID)
	checkSeqs(t, evs)
	if got := output(t, evs); !strings.Contains(got, "hi\n") || !strings.Contains(got, "there\n") {
		t.Errorf("output = %q; want hi and there", got)
	}
	j, err := cp.GetJob(ctx, ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != cpapi.JobCompleted || j.Result == nil || j.Result.ExitCode == nil || *j.Result.ExitCode != 0 {
		t.Errorf("GetJob = %+v; want completed with exit code 0", j)
	}

	failing := scriptJob(ctx, t, cp, srv, "exit 3")
	allEvents(ctx, t, cp, failing.ID)
	if j, err := cp.GetJob(ctx, failing.ID); err != nil || j.Status != cpapi.JobFailed || j.StatusReason != cpapi.ReasonExitCode ||
		j.Result == nil || j.Result.ExitCode == nil || *j.Result.ExitCode != 3 {
		t.Errorf("GetJob(exit 3) = %+v, %v; want failed, exit_code, 3", j, err)
	}

	t.Run("ListJobs", func(t *testing.T) {
		list, err := cp.ListJobs(ctx, client.ListJobsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Jobs) != 2 || list.Jobs[0].ID != failing.ID || list.Jobs[1].ID != ok.ID {
			t.Errorf("ListJobs = %+v; want [%s %s], newest first", list.Jobs, failing.ID, ok.ID)
		}
		page, err := cp.ListJobs(ctx, client.ListJobsOptions{Limit: 1})
		if err != nil || len(page.Jobs) != 1 || page.Next == "" {
			t.Fatalf("ListJobs(limit 1) = %+v, %v; want one job and a cursor", page, err)
		}
		next, err := cp.ListJobs(ctx, client.ListJobsOptions{Limit: 1, Cursor: page.Next})
		if err != nil || len(next.Jobs) != 1 || next.Jobs[0].ID != ok.ID {
			t.Errorf("ListJobs(cursor) = %+v, %v; want %s", next, err, ok.ID)
		}
		done, err := cp.ListJobs(ctx, client.ListJobsOptions{Status: cpapi.JobCompleted})
		if err != nil || len(done.Jobs) != 1 || done.Jobs[0].ID != ok.ID {
			t.Errorf("ListJobs(completed) = %+v, %v; want %s", done, err, ok.ID)
		}
	})

	t.Run("EventsPage", func(t *testing.T) {
		var paged []cpapi.Event
		for after := int64(0); ; {
			page, err := cp.EventsPage(ctx, ok.ID, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Events) > 2 {
				t.Fatalf("EventsPage(limit 2) has %d events", len(page.Events))
			}
			if len(page.Events) == 0 {
				break
			}
			paged = append(paged, page.Events...)
			after = page.NextAfter
		}
		if len(paged) != len(evs) {
			t.Errorf("the pages hold %d events; the stream had %d", len(paged), len(evs))
		}
		checkSeqs(t, paged)
	})

	t.Run("Artifacts", func(t *testing.T) {
		body, err := cp.Artifacts(ctx, ok.ID)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(body)
		body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s, isSized := body.(interface{ Size() int64 }); !isSized || s.Size() != int64(len(data)) {
			t.Errorf("the body's Size() = %v; want %d", s, len(data))
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("the artifacts are not a zip: %v", err)
		}
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		if !strings.Contains(strings.Join(names, " "), "events.jsonl") {
			t.Errorf("the zip holds %v; want events.jsonl", names)
		}
		if _, err := cp.Diff(ctx, ok.ID); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("Diff(a job without a repository) = %v; want ErrNotFound", err)
		}
	})

	t.Run("Status", func(t *testing.T) {
		st, err := cp.Status(ctx, ok.ID)
		if err != nil || st.Status != "complete" || st.DownloadURL == "" {
			t.Errorf("Status = %+v, %v; want complete with a download URL", st, err)
		}
		st, err = cp.Status(ctx, failing.ID)
		if err != nil || st.Status != "error" {
			t.Errorf("Status(failed) = %+v, %v; want error", st, err)
		}
	})

	t.Run("Schedule", func(t *testing.T) {
		// The seed-001 form asks for the built-in agent: a job, or 422
		// while that agent is not available here.
		res, err := cp.Schedule(ctx, "say hello")
		switch {
		case errors.Is(err, client.ErrUnprocessable):
		case err != nil:
			t.Fatalf("Schedule: %v", err)
		default:
			if _, err := cp.GetJob(ctx, res.JobID); err != nil {
				t.Errorf("GetJob(the scheduled job %q): %v", res.JobID, err)
			}
			_, _ = cp.CancelJob(ctx, res.JobID)
		}
	})

	t.Run("CancelAndSend", func(t *testing.T) {
		long := scriptJob(ctx, t, cp, srv, "sleep 60")
		if err := cp.SendMessage(ctx, long.ID, "hello"); !errors.Is(err, client.ErrConflict) {
			t.Errorf("SendMessage(a script job) = %v; want ErrConflict", err)
		}
		if err := cp.SendMessage(ctx, long.ID, ""); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("SendMessage(no text) = %v; want ErrInvalid", err)
		}
		j, err := cp.CancelJob(ctx, long.ID)
		if err != nil || j.Status != cpapi.JobCancelled {
			t.Fatalf("CancelJob = %+v, %v; want cancelled", j, err)
		}
		if _, err := cp.CancelJob(ctx, long.ID); !errors.Is(err, client.ErrConflict) {
			t.Errorf("CancelJob(cancelled) = %v; want ErrConflict", err)
		}
		evs := allEvents(ctx, t, cp, long.ID) // a finished job's stream replays and ends
		checkSeqs(t, evs)
	})
}

func TestControlPlaneTenantEvents(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, 2*time.Minute)

	st, err := cp.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := scriptJob(ctx, t, cp, srv, "true")
	var path []string
	for {
		e, err := st.Next()
		if err != nil {
			t.Fatalf("Events.Next after %v: %v", path, err)
		}
		if e.JobID != j.ID {
			continue
		}
		path = append(path, e.To)
		if client.FinalStatus(e.To) {
			break
		}
	}
	if got, want := strings.Join(path, " "), "pending creating running completing completed"; got != want {
		t.Errorf("the tenant stream showed %q; want %q", got, want)
	}
}
