package jobs_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// TestTwoReplicasRunEachJobOnce: two control planes, each with its own
// Store, Broker and sandbox service, over one PostgreSQL database, share
// 20 jobs; each job runs exactly once.
func TestTwoReplicasRunEachJobOnce(t *testing.T) {
	e := newEnv(t, storetest.Backends()[1]) // postgres
	st2 := storetest.Open(t, e.url)
	sb2 := newSandboxes(e.sb.rt, e.sb.tpl)
	o1, o2 := e.options(), e.options()
	o1.WorkerID, o2.WorkerID = "replica-1", "replica-2"
	// A lease long enough that a renewal delayed by a loaded machine never
	// looks like a dead replica: this test is about exclusive claims, not
	// adoption (crash_test.go covers that).
	o1.Lease, o2.Lease = 15*time.Second, 15*time.Second
	// Likewise heartbeats: with the test's 100 ms beat, three probes that
	// time out on a starved machine would fail a healthy job (seen once).
	o1.HeartbeatMisses, o2.HeartbeatMisses = 30, 30
	o2.Store, o2.Broker, o2.Sandboxes = st2, newBroker(t, st2), sb2
	m1, _ := e.start(o1)
	m2, _ := e.start(o2)

	var ids []string
	for i := range 20 {
		m := []*jobs.Manager{m1, m2}[i%2]
		ids = append(ids, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: fmt.Sprintf("echo job %d; sleep 0.2", i)}).ID)
	}
	ran := [2]int{}
	for i, id := range ids {
		j := e.final(m1, id)
		evs := e.events(id)
		if j.Status != cpapi.JobCompleted {
			t.Errorf("job %d = %s %s", i, j.Status, j.StatusReason)
			for _, ev := range evs {
				if ev.Type == cpapi.EventJobState || ev.Type == cpapi.EventError {
					t.Logf("job %d: %s %s", i, ev.Type, ev.Data)
				}
			}
		}
		if n := countState(t, evs, "creating>running"); n != 1 {
			t.Errorf("job %d entered running %d times; want 1", i, n)
		}
		c1, c2 := e.sb.created(id), sb2.created(id)
		if c1+c2 != 1 {
			t.Errorf("job %d got %d + %d sandboxes; want 1", i, c1, c2)
		}
		ran[0] += c1
		ran[1] += c2
		if stdout, _, _ := output(t, evs); stdout != fmt.Sprintf("job %d\n", i) {
			t.Errorf("job %d output = %q", i, stdout)
		}
	}
	if ran[0] == 0 || ran[1] == 0 {
		t.Errorf("replicas ran %v jobs; want both to take some", ran)
	}
}

func countState(t testing.TB, evs []store.Event, move string) int {
	n := 0
	for _, s := range states(t, evs) {
		if s == move {
			n++
		}
	}
	return n
}

// TestConcurrencyLimits: at no moment do more jobs hold a slot (creating
// to final) than the tenant's max_concurrent_jobs or the replica's Workers.
func TestConcurrencyLimits(t *testing.T) {
	for _, tc := range []struct {
		name             string
		tenantMax, works int
		jobs             int
		want             int
	}{
		{"tenant max 1", 1, 4, 3, 1},
		{"tenant max 2", 2, 4, 5, 2},
		{"workers 2", 0, 2, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sqlite())
			e.tenant = storetest.Tenant(t, e.st, "limited", tc.tenantMax).ID
			opts := e.options()
			opts.Workers = tc.works
			m, _ := e.start(opts)
			var ids []string
			for range tc.jobs {
				ids = append(ids, e.submit(m, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "sleep 0.3"}).ID)
			}
			type edge struct {
				at    time.Time
				delta int
			}
			var edges []edge
			for _, id := range ids {
				if j := e.final(m, id); j.Status != cpapi.JobCompleted {
					t.Fatalf("job = %s %s", j.Status, j.StatusReason)
				}
				for _, ev := range e.events(id) {
					var d cpapi.StateData
					if ev.Type != cpapi.EventJobState || json.Unmarshal(ev.Data, &d) != nil {
						continue
					}
					switch {
					case d.To == cpapi.JobCreating:
						edges = append(edges, edge{ev.Time, +1})
					case store.JobStatus(d.To).Terminal():
						edges = append(edges, edge{ev.Time, -1})
					}
				}
			}
			slices.SortFunc(edges, func(a, b edge) int {
				if c := a.at.Compare(b.at); c != 0 {
					return c
				}
				return a.delta - b.delta // ends before starts at the same instant
			})
			cur, peak := 0, 0
			for _, ed := range edges {
				cur += ed.delta
				peak = max(peak, cur)
			}
			if peak != tc.want {
				t.Errorf("at most %d jobs ran at once; want %d", peak, tc.want)
			}
		})
	}
}

// TestCancelOnOtherReplica: a job running on one replica is cancelled
// through another; it ends cancelled, its sandbox goes, and the replica
// running it writes no state or error events after the cancel.
func TestCancelOnOtherReplica(t *testing.T) {
	e := newEnv(t, storetest.Backends()[1]) // postgres
	st2 := storetest.Open(t, e.url)
	o1, o2 := e.options(), e.options()
	o1.WorkerID, o2.WorkerID = "replica-1", "replica-2"
	o2.Store, o2.Broker, o2.Sandboxes, o2.Workers = st2, newBroker(t, st2), newSandboxes(e.sb.rt, e.sb.tpl), 1
	m1, _ := e.start(o1)
	j := e.submit(m1, cpapi.JobRequest{Agent: cpapi.AgentScript, Command: `while true; do echo tick; sleep 0.02; done`})
	e.wait(m1, j.ID, time.Minute, cpapi.JobRunning)
	waitOutput(t, e, j.ID, "tick\ntick\n")
	m2, _ := e.start(o2) // only now, so the job is surely replica-1's
	got, err := m2.Cancel(t.Context(), e.tenant, j.ID)
	if err != nil || got.Status != cpapi.JobCancelled {
		t.Fatalf("Cancel on the other replica = %+v, %v", got, err)
	}
	waitGone(t, e, j.ID)
	time.Sleep(2 * o1.Lease / 3) // replica-1 has renewed (and failed to) by now
	evs := e.events(j.ID)
	cancelled := false
	for _, ev := range evs {
		if cancelled && ev.Type != cpapi.EventProcessOutput {
			t.Errorf("after the cancel: %s %s", ev.Type, ev.Data)
		}
		var d cpapi.StateData
		if ev.Type == cpapi.EventJobState && json.Unmarshal(ev.Data, &d) == nil && d.To == cpapi.JobCancelled {
			cancelled = true
		}
	}
	if j, _ := m1.Get(t.Context(), e.tenant, j.ID); j.Status != cpapi.JobCancelled {
		t.Errorf("job = %s; want cancelled", j.Status)
	}
}
