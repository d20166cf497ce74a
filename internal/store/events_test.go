package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// testEventsGapFree: 10 goroutines append 100 events each, one at a time,
// to one job. The log is then seq 1 (the creation event) and 2..1001, each
// exactly once, and every append got the seqs it was told.
func testEventsGapFree(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	j := storetest.Job(t, s, tn.ID)

	var wg sync.WaitGroup
	got := make([][]int64, 10)
	for g := range 10 {
		wg.Go(func() {
			for i := range 100 {
				evs, err := s.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message",
					Data: json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))}})
				if err != nil || len(evs) != 1 {
					t.Errorf("AppendEvents = %v, %v", evs, err)
					return
				}
				got[g] = append(got[g], evs[0].Seq)
			}
		})
	}
	wg.Wait()

	seen := map[int64]bool{}
	for g, seqs := range got {
		for i, seq := range seqs {
			if i > 0 && seq <= seqs[i-1] {
				t.Errorf("goroutine %d got seq %d after %d", g, seq, seqs[i-1])
			}
			if seen[seq] {
				t.Errorf("seq %d handed out twice", seq)
			}
			seen[seq] = true
		}
	}
	for seq := int64(2); seq <= 1001; seq++ {
		if !seen[seq] {
			t.Errorf("seq %d never handed out", seq)
		}
	}
	evs, err := s.EventsAfter(ctx, j.ID, 0, 10000)
	must(t, "EventsAfter", err)
	if len(evs) != 1001 {
		t.Fatalf("log has %d events; want 1001", len(evs))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.JobID != j.ID {
			t.Fatalf("event %d has seq %d job %s; want %d %s", i, e.Seq, e.JobID, i+1, j.ID)
		}
	}
	if j, err := s.LoadJob(ctx, j.ID); err != nil || j.NextSeq != 1002 {
		t.Errorf("LoadJob = next seq %d, %v; want 1002", j.NextSeq, err)
	}
}

func testEventsBatchAndPaging(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	j := storetest.Job(t, s, tn.ID)

	in := make([]store.EventInput, 450) // more than one INSERT's worth
	for i := range in {
		in[i] = store.EventInput{Type: "process.output", Data: json.RawMessage(fmt.Sprintf(`{"stream":"stdout","data":"line %d\n"}`, i))}
	}
	in[7].Data = nil
	evs, err := s.AppendEvents(ctx, j.ID, in)
	must(t, "AppendEvents(450)", err)
	if len(evs) != 450 || evs[0].Seq != 2 || evs[449].Seq != 451 || string(evs[7].Data) != "{}" {
		t.Fatalf("AppendEvents = %d events, seqs %d..%d; want 450, 2..451", len(evs), evs[0].Seq, evs[len(evs)-1].Seq)
	}
	var all []store.Event
	for after := int64(0); ; {
		page, err := s.EventsAfter(ctx, j.ID, after, 100)
		must(t, "EventsAfter", err)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	if len(all) != 451 {
		t.Fatalf("paged %d events; want 451", len(all))
	}
	for i := 1; i < len(all); i++ {
		e := all[i]
		if e.Seq != int64(i+1) || e.Type != "process.output" || !e.Time.Equal(evs[0].Time) || string(e.Data) != string(evs[i-1].Data) {
			t.Fatalf("event %d = %+v; want %+v", i, e, evs[i-1])
		}
	}
	if evs, err := s.EventsAfter(ctx, "job_missing", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("EventsAfter(unknown job) = %v, %v; want none", evs, err)
	}
	if evs, err := s.AppendEvents(ctx, j.ID, nil); err != nil || evs != nil {
		t.Errorf("AppendEvents(none) = %v, %v; want nothing", evs, err)
	}
	e, err := s.AppendTenantEvents(ctx, tn.ID, j.ID, []store.EventInput{{Type: "message", Data: json.RawMessage(`{"role":"user","text":"hi"}`)}})
	if err != nil || len(e) != 1 || e[0].Seq != 452 {
		t.Errorf("AppendTenantEvents = %v, %v; want seq 452", e, err)
	}
}

func testEventsBadInput(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	j := storetest.Job(t, s, tn.ID)
	ok := store.EventInput{Type: "message", Data: json.RawMessage(`{}`)}
	tests := []struct {
		name string
		job  string
		in   []store.EventInput
		want error
	}{
		{"unknown job", "job_missing", []store.EventInput{ok}, errdefs.ErrNotFound},
		{"empty type", j.ID, []store.EventInput{ok, {Type: ""}}, errdefs.ErrInvalid},
		{"type with spaces", j.ID, []store.EventInput{{Type: "tool call"}}, errdefs.ErrInvalid},
		{"type too long", j.ID, []store.EventInput{{Type: strings.Repeat("a", 65)}}, errdefs.ErrInvalid},
		{"data not JSON", j.ID, []store.EventInput{ok, {Type: "message", Data: json.RawMessage(`{"a":`)}}, errdefs.ErrInvalid},
		{"data too large", j.ID, []store.EventInput{{Type: "raw", Data: json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)}}, errdefs.ErrTooLarge},
	}
	for _, tt := range tests {
		_, err := s.AppendEvents(ctx, tt.job, tt.in)
		wantClass(t, "AppendEvents("+tt.name+")", err, tt.want)
	}
	// A rejected batch appends nothing, not even its good events.
	if evs, err := s.EventsAfter(ctx, j.ID, 0, 0); err != nil || len(evs) != 1 {
		t.Errorf("after bad appends the log has %d events, %v; want 1", len(evs), err)
	}
	_, err := s.EventsAfter(ctx, j.ID, -1, 0)
	wantClass(t, "EventsAfter(-1)", err, errdefs.ErrInvalid)
	_, err = s.EventsAfter(ctx, j.ID, 0, -1)
	wantClass(t, "EventsAfter(limit -1)", err, errdefs.ErrInvalid)
}

func testWatch(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	var mu sync.Mutex
	var got []store.Appended
	stop := s.Watch(func(a store.Appended) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a)
	})
	j := storetest.Job(t, s, tn.ID)
	_, err := s.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message"}, {Type: "agent.thought"}})
	must(t, "AppendEvents", err)
	_, err = s.TransitionJob(ctx, j.ID, store.JobPending, store.JobCancelled, "user", nil)
	must(t, "TransitionJob", err)
	_, err = s.TransitionJob(ctx, j.ID, store.JobPending, store.JobCancelled, "user", nil) // fails: no report
	wantClass(t, "TransitionJob(again)", err, errdefs.ErrConflict)
	stop()
	_, err = s.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message"}})
	must(t, "AppendEvents after stop", err)

	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		last   int64
		n      int
		states []int64
	}{{1, 1, []int64{1}}, {3, 2, nil}, {4, 1, []int64{4}}}
	if len(got) != len(want) {
		t.Fatalf("Watch saw %d appends; want %d", len(got), len(want))
	}
	for i, w := range want {
		a := got[i]
		if a.JobID != j.ID || a.TenantID != tn.ID || a.LastSeq != w.last || len(a.Events) != w.n || fmt.Sprint(a.StateSeqs) != fmt.Sprint(w.states) {
			t.Errorf("append %d = %+v; want last seq %d, %d events, state seqs %v", i, a, w.last, w.n, w.states)
		}
	}
}

// testListen: appends on one Store reach Listen on another Store over the
// same PostgreSQL database, and a Store does not hear its own.
func testListen(t *testing.T, b storetest.Backend) {
	ctx, cancel := context.WithCancel(context.Background())
	s1, url := storetest.Fresh(t, b)
	if s1.Backend() == "sqlite" {
		if err := s1.Listen(ctx, func(store.Appended) { t.Error("sqlite Listen reported something") }); err != nil {
			t.Errorf("sqlite Listen = %v; want nil at once", err)
		}
		cancel()
		return
	}
	s2 := storetest.Open(t, url)
	ch := make(chan store.Appended, 16)
	done := make(chan error, 1)
	go func() { done <- s2.Listen(ctx, func(a store.Appended) { ch <- a }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen = %v", err)
		}
	}()
	if a := recv(t, ch); !a.Resync {
		t.Fatalf("first report = %+v; want Resync", a)
	}
	tn := storetest.Tenant(t, s1, "a", 0)
	j := storetest.Job(t, s1, tn.ID)
	if a := recv(t, ch); a.JobID != j.ID || a.TenantID != tn.ID || a.LastSeq != 1 || a.Events != nil || fmt.Sprint(a.StateSeqs) != "[1]" {
		t.Errorf("report of CreateJob = %+v; want job %s seq 1, state seq 1, no events", a, j.ID)
	}
	_, err := s1.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message"}, {Type: "message"}})
	must(t, "AppendEvents", err)
	if a := recv(t, ch); a.LastSeq != 3 || len(a.StateSeqs) != 0 {
		t.Errorf("report of AppendEvents = %+v; want last seq 3", a)
	}
	_, err = s2.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message"}}) // its own: not reported
	must(t, "AppendEvents(s2)", err)
	_, err = s1.AppendEvents(ctx, j.ID, []store.EventInput{{Type: "message"}})
	must(t, "AppendEvents", err)
	if a := recv(t, ch); a.LastSeq != 5 {
		t.Errorf("next report = %+v; want s1's seq 5 (s2's own seq 4 not reported)", a)
	}
}

func recv(t *testing.T, ch <-chan store.Appended) store.Appended {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no report within 10s")
		return store.Appended{}
	}
}
