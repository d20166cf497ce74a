package controlplane_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// TestTwoServersOnePostgres runs two control planes over one PostgreSQL
// database (and one host's runtime state, as two replicas on one machine
// would share it) and checks every job submitted to either runs exactly
// once.
func TestTwoServersOnePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	var pg storetest.Backend
	for _, b := range storetest.Backends() {
		if b.Name == "postgres" {
			pg = b
		}
	}
	url := pg.NewURL(t)
	stateRoot := controlplanetest.StateRoot(t)
	dataDir := t.TempDir() // artifacts must be on storage both replicas share
	opts := controlplanetest.Options{Database: url, StateRoot: stateRoot, DataDir: dataDir}
	opts.WorkerID = "replica-a"
	srvA := controlplanetest.Start(t, opts)
	opts.WorkerID = "replica-b"
	srvB := controlplanetest.Start(t, opts)
	a, b := apiFor(t, srvA), apiFor(t, srvB)

	var ids []string
	for i := 0; i < 12; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		ids = append(ids, c.submit(cpapi.JobRequest{Agent: "script", Command: fmt.Sprintf("echo job-%d", i)}).ID)
	}
	for i, id := range ids {
		j := b.waitJob(id, cpapi.JobCompleted, cpapi.JobFailed)
		if j.Status != cpapi.JobCompleted {
			t.Errorf("job %s = %+v", id, j)
			continue
		}
		runs := 0
		evs := a.events(id)
		for _, e := range evs {
			var st cpapi.StateData
			if e.Type == cpapi.EventJobState && json.Unmarshal(e.Data, &st) == nil && st.To == cpapi.JobRunning {
				runs++
			}
		}
		if runs != 1 {
			t.Errorf("job %s ran %d times; want exactly once", id, runs)
		}
		if out := outputOf(evs); out != fmt.Sprintf("job-%d\n", i) {
			t.Errorf("job %s output = %q", id, out)
		}
		if resp, _ := a.do("GET", "/v1/jobs/"+id+"/artifacts", nil); resp.StatusCode != 200 {
			t.Errorf("artifacts of %s through the other replica = %d", id, resp.StatusCode)
		}
	}
}
