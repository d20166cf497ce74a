package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// newIdle returns a Manager that is never run, over a fresh SQLite store,
// and a tenant: enough for everything but running jobs.
func newIdle(t *testing.T) (*jobs.Manager, *store.Store, string) {
	t.Helper()
	st, _ := storetest.Fresh(t, sqlite())
	m, err := jobs.New(jobs.Options{Store: st, Broker: newBroker(t, st), Sandboxes: newSandboxes(nil, ""),
		ArtifactsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return m, st, storetest.Tenant(t, st, "acme", 0).ID
}

// TestStateMachine checks the life cycle of DESIGN.md §3 exhaustively:
// every (from, to) pair, in the table and against both real stores.
func TestStateMachine(t *testing.T) {
	all := []store.JobStatus{store.JobPending, store.JobCreating, store.JobRunning, store.JobCompleting,
		store.JobCompleted, store.JobFailed, store.JobCancelled}
	legal := map[[2]store.JobStatus]bool{}
	for _, p := range [][2]store.JobStatus{
		{store.JobPending, store.JobCreating}, {store.JobCreating, store.JobRunning},
		{store.JobRunning, store.JobCompleting}, {store.JobCompleting, store.JobCompleted},
		{store.JobCreating, store.JobFailed}, {store.JobRunning, store.JobFailed}, {store.JobCompleting, store.JobFailed},
		{store.JobPending, store.JobCancelled}, {store.JobCreating, store.JobCancelled},
		{store.JobRunning, store.JobCancelled}, {store.JobCompleting, store.JobCancelled},
	} {
		legal[p] = true
	}
	for _, s := range all { // the API names the same states
		if !slices.Contains([]string{cpapi.JobPending, cpapi.JobCreating, cpapi.JobRunning, cpapi.JobCompleting,
			cpapi.JobCompleted, cpapi.JobFailed, cpapi.JobCancelled}, string(s)) {
			t.Errorf("store state %q is not an API state", s)
		}
	}
	for _, from := range all {
		for _, to := range all {
			if got := store.CanTransition(from, to); got != legal[[2]store.JobStatus{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %v; want %v", from, to, got, !got)
			}
		}
	}
	// The path from pending to each state.
	path := map[store.JobStatus][]store.JobStatus{
		store.JobPending: nil, store.JobCreating: {store.JobCreating},
		store.JobRunning:    {store.JobCreating, store.JobRunning},
		store.JobCompleting: {store.JobCreating, store.JobRunning, store.JobCompleting},
		store.JobCompleted:  {store.JobCreating, store.JobRunning, store.JobCompleting, store.JobCompleted},
		store.JobFailed:     {store.JobCreating, store.JobFailed},
		store.JobCancelled:  {store.JobCancelled},
	}
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		st, _ := storetest.Fresh(t, be)
		tn := storetest.Tenant(t, st, "sm", 0)
		for _, from := range all {
			for _, to := range all {
				j := storetest.Job(t, st, tn.ID)
				cur := store.JobPending
				for _, s := range path[from] {
					if _, err := st.TransitionJob(ctx, j.ID, cur, s, "", nil); err != nil {
						t.Fatalf("path to %s: %s → %s: %v", from, cur, s, err)
					}
					cur = s
				}
				before, _ := st.EventsAfter(ctx, j.ID, 0, 100)
				got, err := st.TransitionJob(ctx, j.ID, from, to, "r", nil)
				after, _ := st.EventsAfter(ctx, j.ID, 0, 100)
				if legal[[2]store.JobStatus{from, to}] {
					if err != nil || got.Status != to || len(after) != len(before)+1 {
						t.Errorf("%s → %s = %v, %d new events; want done with one job.state event", from, to, err, len(after)-len(before))
					}
					continue
				}
				if !errors.Is(err, errdefs.ErrInvalid) || len(after) != len(before) {
					t.Errorf("%s → %s = %v, %d new events; want ErrInvalid and nothing written", from, to, err, len(after)-len(before))
				}
			}
		}
		// Compare-and-set: a move from a state the job is not in is a conflict.
		j := storetest.Job(t, st, tn.ID)
		_, err := st.TransitionJob(ctx, j.ID, store.JobCreating, store.JobRunning, "", nil)
		wantClass(t, "TransitionJob(wrong from)", err, errdefs.ErrConflict)
	})
}

func TestSubmitValidation(t *testing.T) {
	m, _, tenant := newIdle(t)
	script := func(f func(*cpapi.JobRequest)) cpapi.JobRequest {
		r := cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}
		f(&r)
		return r
	}
	manyEnv := map[string]string{}
	for i := range 129 {
		manyEnv[fmt.Sprintf("V%d", i)] = "x"
	}
	manyLabels := map[string]string{}
	for i := range 65 {
		manyLabels[fmt.Sprintf("l%d", i)] = "x"
	}
	for _, tc := range []struct {
		name string
		req  cpapi.JobRequest
		want error
	}{
		{"empty", cpapi.JobRequest{}, errdefs.ErrInvalid},
		{"builtin", cpapi.JobRequest{Task: "build it"}, errdefs.ErrUnprocessable},
		{"claude-code", cpapi.JobRequest{Agent: cpapi.AgentClaudeCode, Task: "x"}, errdefs.ErrUnprocessable},
		{"unknown agent", cpapi.JobRequest{Agent: "hal", Task: "x"}, errdefs.ErrInvalid},
		{"script without command", cpapi.JobRequest{Agent: cpapi.AgentScript, Task: "x"}, errdefs.ErrInvalid},
		{"blank command", script(func(r *cpapi.JobRequest) { r.Command = " \n" }), errdefs.ErrInvalid},
		{"command for builtin", cpapi.JobRequest{Task: "x", Command: "ls"}, errdefs.ErrInvalid},
		{"command with NUL", script(func(r *cpapi.JobRequest) { r.Command = "a\x00b" }), errdefs.ErrInvalid},
		{"huge task", script(func(r *cpapi.JobRequest) { r.Task = strings.Repeat("x", 257<<10) }), errdefs.ErrInvalid},
		{"task not UTF-8", script(func(r *cpapi.JobRequest) { r.Task = "\xff" }), errdefs.ErrInvalid},
		{"negative timeout", script(func(r *cpapi.JobRequest) { r.TimeoutS = -1 }), errdefs.ErrInvalid},
		{"timeout over a day", script(func(r *cpapi.JobRequest) { r.TimeoutS = 86401 }), errdefs.ErrInvalid},
		{"network host", script(func(r *cpapi.JobRequest) { r.Network = "host" }), errdefs.ErrInvalid},
		{"negative cpus", script(func(r *cpapi.JobRequest) { r.Resources = &cpapi.Resources{CPUs: -1} }), errdefs.ErrInvalid},
		{"NaN cpus", script(func(r *cpapi.JobRequest) { r.Resources = &cpapi.Resources{CPUs: math.NaN()} }), errdefs.ErrInvalid},
		{"negative memory", script(func(r *cpapi.JobRequest) { r.Resources = &cpapi.Resources{MemoryMB: -1} }), errdefs.ErrInvalid},
		{"negative pids", script(func(r *cpapi.JobRequest) { r.Resources = &cpapi.Resources{PIDs: -5} }), errdefs.ErrInvalid},
		{"negative disk", script(func(r *cpapi.JobRequest) { r.Resources = &cpapi.Resources{DiskMB: -1} }), errdefs.ErrInvalid},
		{"env name with dash", script(func(r *cpapi.JobRequest) { r.Env = map[string]string{"A-B": "1"} }), errdefs.ErrInvalid},
		{"env name with digit first", script(func(r *cpapi.JobRequest) { r.Env = map[string]string{"1A": "1"} }), errdefs.ErrInvalid},
		{"env name empty", script(func(r *cpapi.JobRequest) { r.Env = map[string]string{"": "1"} }), errdefs.ErrInvalid},
		{"env reserved", script(func(r *cpapi.JobRequest) { r.Env = map[string]string{"CORRAL_SANDBOX_TOKEN": "x"} }), errdefs.ErrInvalid},
		{"env value with NUL", script(func(r *cpapi.JobRequest) { r.Env = map[string]string{"A": "\x00"} }), errdefs.ErrInvalid},
		{"too many env", script(func(r *cpapi.JobRequest) { r.Env = manyEnv }), errdefs.ErrInvalid},
		{"65 labels", script(func(r *cpapi.JobRequest) { r.Labels = manyLabels }), errdefs.ErrInvalid},
		{"empty label key", script(func(r *cpapi.JobRequest) { r.Labels = map[string]string{"": "x"} }), errdefs.ErrInvalid},
		{"long label key", script(func(r *cpapi.JobRequest) { r.Labels = map[string]string{strings.Repeat("k", 64): "x"} }), errdefs.ErrInvalid},
		{"long label value", script(func(r *cpapi.JobRequest) { r.Labels = map[string]string{"k": strings.Repeat("v", 257)} }), errdefs.ErrInvalid},
		{"model without provider", script(func(r *cpapi.JobRequest) { r.Model = "gpt-5" }), errdefs.ErrInvalid},
		{"model without name", script(func(r *cpapi.JobRequest) { r.Model = "openai/" }), errdefs.ErrInvalid},
		{"template path", script(func(r *cpapi.JobRequest) { r.Template = "../etc" }), errdefs.ErrInvalid},
		{"runtime with space", script(func(r *cpapi.JobRequest) { r.Runtime = "dock er" }), errdefs.ErrInvalid},
		{"repo without url", script(func(r *cpapi.JobRequest) { r.Repo = &cpapi.Repo{} }), errdefs.ErrInvalid},
		{"repo url option", script(func(r *cpapi.JobRequest) { r.Repo = &cpapi.Repo{URL: "--upload-pack=x"} }), errdefs.ErrInvalid},
		{"repo file url", script(func(r *cpapi.JobRequest) { r.Repo = &cpapi.Repo{URL: "file:///etc"} }), errdefs.ErrInvalid},
		{"repo ref option", script(func(r *cpapi.JobRequest) { r.Repo = &cpapi.Repo{URL: "https://example.com/r.git", Ref: "-f"} }), errdefs.ErrInvalid},
		{"repo bad secret", script(func(r *cpapi.JobRequest) { r.Repo = &cpapi.Repo{URL: "https://example.com/r.git", Secret: "a b"} }), errdefs.ErrInvalid},
		{"secret name", script(func(r *cpapi.JobRequest) { r.Secrets = []string{"A-B"} }), errdefs.ErrInvalid},
		{"secret reserved", script(func(r *cpapi.JobRequest) { r.Secrets = []string{"CORRAL_X"} }), errdefs.ErrInvalid},
		{"secret and env", script(func(r *cpapi.JobRequest) { r.Secrets = []string{"A"}; r.Env = map[string]string{"A": "1"} }), errdefs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Submit(context.Background(), tenant, tc.req)
			wantClass(t, "Submit", err, tc.want)
		})
	}

	okLabels := map[string]string{}
	for i := range 64 {
		okLabels[fmt.Sprintf("l%d", i)] = "x"
	}
	for _, tc := range []struct {
		name string
		req  cpapi.JobRequest
	}{
		{"minimal", cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"}},
		{"everything", cpapi.JobRequest{Agent: cpapi.AgentScript, Task: "t", Command: "make", Model: "anthropic/claude",
			Runtime: "bwrap", Template: "corral-minimal", Network: cpapi.NetworkEgress, TimeoutS: 86400,
			Resources: &cpapi.Resources{CPUs: 1.5, MemoryMB: 512, PIDs: 100, DiskMB: 1024},
			Env:       map[string]string{"API_KEY": "secret", "_X1": ""}, Labels: okLabels}},
	} {
		t.Run("valid "+tc.name, func(t *testing.T) {
			j, err := m.Submit(context.Background(), tenant, tc.req)
			if err != nil || j.Status != cpapi.JobPending || j.Agent != cpapi.AgentScript {
				t.Errorf("Submit = %+v, %v; want a pending script job", j, err)
			}
		})
	}
	_, err := m.Submit(context.Background(), "tn_nosuchtenant", cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"})
	wantClass(t, "Submit(unknown tenant)", err, errdefs.ErrNotFound)
}

func TestListAndGet(t *testing.T) {
	m, st, tenant := newIdle(t)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		j, err := m.Submit(ctx, tenant, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: fmt.Sprintf("echo %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if _, err := m.Cancel(ctx, tenant, ids[0]); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for {
		page, err := m.List(ctx, tenant, "", cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			got = append(got, j.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Errorf("List pages = %v; want newest first %v", got, want)
	}
	page, err := m.List(ctx, tenant, "cancelled", "", 0)
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != ids[0] {
		t.Errorf("List(cancelled) = %+v, %v", page, err)
	}
	page, err = m.List(ctx, tenant, "pending,cancelled", "", 0)
	if err != nil || len(page.Jobs) != 5 {
		t.Errorf("List(pending,cancelled) = %d jobs, %v; want 5", len(page.Jobs), err)
	}
	_, err = m.List(ctx, tenant, "sleeping", "", 0)
	wantClass(t, "List(bad status)", err, errdefs.ErrInvalid)
	_, err = m.List(ctx, tenant, "", "garbage", 0)
	wantClass(t, "List(bad cursor)", err, errdefs.ErrInvalid)

	j, err := m.Get(ctx, tenant, ids[1])
	if err != nil || j.Task != "echo 1" || j.Labels == nil || j.StartedAt != nil || j.Result != nil {
		t.Errorf("Get = %+v, %v; want the job, its command as task", j, err)
	}
	other := storetest.Tenant(t, st, "other", 0).ID
	_, err = m.Get(ctx, other, ids[1])
	wantClass(t, "Get(other tenant)", err, errdefs.ErrNotFound)
	if page, err := m.List(ctx, other, "", "", 0); err != nil || len(page.Jobs) != 0 {
		t.Errorf("List(other tenant) = %+v, %v; want none", page, err)
	}
}

func TestSendMessage(t *testing.T) {
	m, st, tenant := newIdle(t)
	ctx := context.Background()
	j, err := m.Submit(ctx, tenant, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	wantClass(t, "SendMessage(script)", m.SendMessage(ctx, tenant, j.ID, "hi"), errdefs.ErrConflict)
	wantClass(t, "SendMessage(empty)", m.SendMessage(ctx, tenant, j.ID, " "), errdefs.ErrInvalid)
	wantClass(t, "SendMessage(huge)", m.SendMessage(ctx, tenant, j.ID, strings.Repeat("x", 65<<10)), errdefs.ErrTooLarge)
	wantClass(t, "SendMessage(unknown)", m.SendMessage(ctx, tenant, "job_nosuch", "hi"), errdefs.ErrNotFound)

	// A job of an agent that takes messages (stored directly: Submit does
	// not accept such agents yet) gets them in its log.
	sj, err := st.CreateJob(ctx, store.Job{TenantID: tenant, Spec: []byte(`{"task":"t","agent":"builtin"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SendMessage(ctx, tenant, sj.ID, "use tabs"); err != nil {
		t.Fatalf("SendMessage = %v", err)
	}
	evs, _ := st.EventsAfter(ctx, sj.ID, 0, 10)
	if last := evs[len(evs)-1]; last.Type != cpapi.EventMessage || string(last.Data) != `{"role":"user","text":"use tabs"}` {
		t.Errorf("last event = %s %s; want the user's message", last.Type, last.Data)
	}
	if _, err := m.Cancel(ctx, tenant, sj.ID); err != nil {
		t.Fatal(err)
	}
	wantClass(t, "SendMessage(final)", m.SendMessage(ctx, tenant, sj.ID, "hi"), errdefs.ErrConflict)
}
