package jobs_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/jobs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

type storeEvent = store.Event

// managers counts the Managers running in this test binary; the
// goroutine-leak check runs when the last one stops.
var managers atomic.Int32

// env is one control plane's worth of real parts: a store, a broker, a
// bwrap sandbox service, a tenant.
type env struct {
	t      testing.TB
	st     *store.Store
	url    string
	broker *eventlog.Broker
	sb     *sandboxes
	tenant string
}

func newEnv(t testing.TB, be storetest.Backend) *env {
	t.Helper()
	rt, tpl := testRuntime(t)
	st, url := storetest.Fresh(t, be)
	e := &env{t: t, st: st, url: url, sb: newSandboxes(rt, tpl)}
	e.broker = newBroker(t, st)
	e.tenant = storetest.Tenant(t, st, "acme", 0).ID
	return e
}

func newBroker(t testing.TB, st *store.Store) *eventlog.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := eventlog.New(ctx, st, eventlog.Options{})
	if err != nil {
		t.Fatalf("eventlog.New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// options are fast test defaults.
func (e *env) options() jobs.Options {
	return jobs.Options{Store: e.st, Broker: e.broker, Sandboxes: e.sb, WorkerID: "w1",
		ArtifactsDir: e.t.TempDir(), Heartbeat: 100 * time.Millisecond, Lease: 3 * time.Second,
		RetryBackoff: 50 * time.Millisecond, Poll: 100 * time.Millisecond}
}

// start makes a Manager with opts and runs it until the test ends (or the
// returned stop is called), checking then that Run left no goroutine.
func (e *env) start(opts jobs.Options) (*jobs.Manager, func()) {
	e.t.Helper()
	m, err := jobs.New(opts)
	if err != nil {
		e.t.Fatalf("jobs.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Recover(ctx); err != nil {
		e.t.Errorf("Recover: %v", err)
	}
	done := make(chan error, 1)
	managers.Add(1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				e.t.Errorf("Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			e.t.Fatalf("Run did not return 30 s after its context ended")
		}
		if managers.Add(-1) == 0 {
			noJobGoroutines(e.t)
		}
	}
	e.t.Cleanup(stop)
	return m, stop
}

// noJobGoroutines fails if a goroutine of package jobs outlived Run. It is
// called when no Manager runs.
func noJobGoroutines(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for g := range strings.SplitSeq(stacks, "\n\n") {
			ours := strings.Contains(g, "internal/jobs.(*") || strings.Contains(g, "corral/client.(*Stream)")
			if ours && !strings.Contains(g, "jobs_test.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines of package jobs outlived Run; first:\n%s", len(leaked), leaked[0])
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) submit(m *jobs.Manager, req cpapi.JobRequest) *cpapi.Job {
	e.t.Helper()
	j, err := m.Submit(context.Background(), e.tenant, req)
	if err != nil {
		e.t.Fatalf("Submit(%+v) = %v", req, err)
	}
	return j
}

// wait polls job id until it is in one of the states, within d.
func (e *env) wait(m *jobs.Manager, id string, d time.Duration, states ...string) *cpapi.Job {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		j, err := m.Get(context.Background(), e.tenant, id)
		if err != nil {
			e.t.Fatalf("Get(%s) = %v", id, err)
		}
		for _, s := range states {
			if j.Status == s {
				return j
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s is %s (%s) after %v; want one of %v\nlog:\n%s", id, j.Status, j.StatusReason, d, states, e.dump(id))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// final waits for job id to be final.
func (e *env) final(m *jobs.Manager, id string) *cpapi.Job {
	e.t.Helper()
	return e.wait(m, id, time.Minute, cpapi.JobCompleted, cpapi.JobFailed, cpapi.JobCancelled)
}

// events returns job id's whole log.
func (e *env) events(id string) []store.Event {
	e.t.Helper()
	evs, err := e.st.EventsAfter(context.Background(), id, 0, 10000)
	if err != nil {
		e.t.Fatalf("EventsAfter(%s) = %v", id, err)
	}
	return evs
}

func (e *env) dump(id string) string {
	evs, _ := e.st.EventsAfter(context.Background(), id, 0, 10000)
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Type + " " + string(ev.Data) + "\n")
	}
	return b.String()
}

// chunk is a decoded process.output event.
type chunk struct {
	Stream     string `json:"stream"`
	Data       string `json:"data"`
	DataBase64 string `json:"data_base64"`
	Offset     int64  `json:"offset"`
	Bytes      int64  `json:"bytes"`
}

func (c chunk) bytes() []byte {
	if c.DataBase64 != "" {
		b, _ := base64.StdEncoding.DecodeString(c.DataBase64)
		return b
	}
	return []byte(c.Data)
}

// output returns the job's output per stream, and all of it in offset
// order, checking that the events tile the output log exactly.
func output(t testing.TB, evs []store.Event) (stdout, stderr, all string) {
	t.Helper()
	var o, e, a strings.Builder
	next := int64(0)
	for _, ev := range evs {
		if ev.Type != cpapi.EventProcessOutput {
			continue
		}
		var c chunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("process.output %s: %v", ev.Data, err)
		}
		b := c.bytes()
		if c.Offset != next || int64(len(b)) != c.Bytes {
			t.Errorf("process.output seq %d: offset %d, %d bytes (data %d); want offset %d and bytes = len(data)",
				ev.Seq, c.Offset, c.Bytes, len(b), next)
		}
		next = c.Offset + c.Bytes
		a.Write(b)
		if c.Stream == "stderr" {
			e.Write(b)
		} else {
			o.Write(b)
		}
	}
	return o.String(), e.String(), a.String()
}

// states returns the job.state moves in the log, "from>to:reason".
func states(t testing.TB, evs []store.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Type != cpapi.EventJobState {
			continue
		}
		var d cpapi.StateData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		s := d.From + ">" + d.To
		if d.Reason != "" {
			s += ":" + d.Reason
		}
		out = append(out, s)
	}
	return out
}

// lastIsFinal checks that the log ends with the job's final state.
func lastIsFinal(t testing.TB, evs []store.Event, status string) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatalf("empty log")
	}
	last := evs[len(evs)-1]
	var d cpapi.StateData
	_ = json.Unmarshal(last.Data, &d)
	if last.Type != cpapi.EventJobState || d.To != status {
		t.Errorf("last event = %s %s; want job.state to %s", last.Type, last.Data, status)
	}
}

func wantClass(t testing.TB, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Errorf("%s = %v; want %v", what, err, class)
	}
}

func isNotFound(err error) bool { return errors.Is(err, errdefs.ErrNotFound) }

// forBackends runs fn on SQLite and PostgreSQL.
func forBackends(t *testing.T, fn func(t *testing.T, be storetest.Backend)) {
	for _, be := range storetest.Backends() {
		t.Run(be.Name, func(t *testing.T) { fn(t, be) })
	}
}

func sqlite() storetest.Backend { return storetest.Backends()[0] }
