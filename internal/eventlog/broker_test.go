package eventlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// forBackends runs fn against every store backend, each on a fresh database.
func forBackends(t *testing.T, fn func(t *testing.T, be storetest.Backend)) {
	for _, be := range storetest.Backends() {
		t.Run(be.Name, func(t *testing.T) { fn(t, be) })
	}
}

func newBroker(t testing.TB, s *store.Store, opts eventlog.Options) *eventlog.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := eventlog.New(ctx, s, opts)
	if err != nil {
		t.Fatalf("eventlog.New = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func msg(i int) store.EventInput {
	return store.EventInput{Type: "message", Data: json.RawMessage(fmt.Sprintf(`{"role":"agent","text":"step %d"}`, i))}
}

// readUntil reads s until it has seen seq last, checking that seqs run
// from first without gaps or repeats.
func readUntil(t *testing.T, s *eventlog.Subscription, first, last int64) {
	t.Helper()
	want := first
	for want <= last {
		// A hang guard per event, not for the whole stream: the writer
		// may take long on a loaded machine, and that is not a failure.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		e, err := s.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Next (want seq %d of %d) = %v", want, last, err)
		}
		if e.Seq != want {
			t.Fatalf("Next = seq %d; want %d", e.Seq, want)
		}
		want++
	}
}

// TestReplayThenLive: subscribers that join while a writer appends, at
// various points and with various buffer sizes, see every event once, in
// order, across the replay/live boundary.
func TestReplayThenLive(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s, _ := storetest.Fresh(t, be)
		tn := storetest.Tenant(t, s, "a", 0)
		j := storetest.Job(t, s, tn.ID)
		for _, buf := range []int{4, 64, 0} {
			t.Run(fmt.Sprintf("buffer=%d", buf), func(t *testing.T) {
				b := newBroker(t, s, eventlog.Options{Buffer: buf})
				start, err := s.LoadJob(ctx, j.ID)
				must(t, "LoadJob", err)
				base := start.NextSeq - 1 // events already in the log
				const total = 1500
				writerDone := make(chan struct{})
				go func() {
					defer close(writerDone)
					for n := 0; n < total; {
						k := min(1+rand.IntN(20), total-n)
						batch := make([]store.EventInput, k)
						for i := range batch {
							batch[i] = msg(n + i)
						}
						if _, err := b.Append(ctx, j.ID, tn.ID, batch); err != nil {
							t.Errorf("Append = %v", err)
							return
						}
						n += k
					}
				}()
				var wg sync.WaitGroup
				for i := range 6 {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * 15 * time.Millisecond) // join at different points
						after := int64(0)
						if i%2 == 1 {
							after = base + int64(i*10)
						}
						sub, err := b.Subscribe(ctx, j.ID, after)
						if err != nil {
							t.Errorf("Subscribe = %v", err)
							return
						}
						defer sub.Close()
						readUntil(t, sub, after+1, base+total)
					})
				}
				wg.Wait()
				<-writerDone
			})
		}
	})
}

// TestSlowSubscriber: a subscriber that never reads does not hold up 10,000
// appends, and afterwards still gets all of them, in order.
func TestSlowSubscriber(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s, _ := storetest.Fresh(t, be)
		tn := storetest.Tenant(t, s, "a", 0)
		j := storetest.Job(t, s, tn.ID)
		b := newBroker(t, s, eventlog.Options{Buffer: 32})
		idle, err := b.Subscribe(ctx, j.ID, 0)
		must(t, "Subscribe", err)
		reader, err := b.Subscribe(ctx, j.ID, 0) // one that keeps up, for contrast
		must(t, "Subscribe", err)
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			readUntil(t, reader, 1, 10001)
		}()

		start := time.Now()
		var slowest time.Duration
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 2500 {
					t0 := time.Now()
					if _, err := b.Append(ctx, j.ID, tn.ID, []store.EventInput{msg(w*10000 + i)}); err != nil {
						t.Errorf("Append = %v", err)
						return
					}
					mu.Lock()
					slowest = max(slowest, time.Since(t0))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		// Appends that waited for the idle subscriber would never end; how
		// fast they were is for the log (no wall-clock assertions).
		t.Logf("10,000 appends in %v (slowest %v) with an idle subscriber", time.Since(start), slowest)
		<-readerDone
		readUntil(t, idle, 1, 10001)
	})
}

// TestIdleSubscribers: 1,000 subscribers that wait cost no goroutines and
// little memory, and each gets its event.
func TestIdleSubscribers(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s, _ := storetest.Fresh(t, be)
		tn := storetest.Tenant(t, s, "a", 0)
		b := newBroker(t, s, eventlog.Options{})
		var jobs []string
		for range 10 {
			jobs = append(jobs, storetest.Job(t, s, tn.ID).ID)
		}

		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		subs := make([]*eventlog.Subscription, 1000)
		for i := range subs {
			sub, err := b.Subscribe(ctx, jobs[i%10], 1)
			must(t, "Subscribe", err)
			subs[i] = sub
		}
		for _, id := range jobs {
			_, err := b.Append(ctx, id, tn.ID, []store.EventInput{msg(0)})
			must(t, "Append", err)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("1,000 idle subscribers: %+d goroutines, %+d KiB heap", g1-g0, heap/1024)
		if g1-g0 > 5 {
			t.Errorf("1,000 subscribers added %d goroutines; want none", g1-g0)
		}
		if heap > 8<<20 {
			t.Errorf("1,000 subscribers hold %d KiB; want < 8 MiB", heap/1024)
		}

		for i, sub := range subs {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			e, err := sub.Next(ctx)
			cancel()
			if err != nil || e.Seq != 2 || e.JobID != jobs[i%10] {
				t.Fatalf("subscriber %d: Next = %+v, %v; want seq 2 of %s", i, e, err, jobs[i%10])
			}
			sub.Close()
		}
		// Drivers' per-query goroutines (context watchers) take a moment to exit.
		g := runtime.NumGoroutine()
		for deadline := time.Now().Add(5 * time.Second); g > g0+5 && time.Now().Before(deadline); g = runtime.NumGoroutine() {
			time.Sleep(20 * time.Millisecond)
		}
		if g > g0+5 {
			t.Errorf("after Close: %d goroutines; had %d", g, g0)
		}
	})
}

// TestCrossReplica: two Brokers on two Stores over one PostgreSQL database,
// as two control-plane replicas: events appended through either reach
// subscribers of the other.
func TestCrossReplica(t *testing.T) {
	ctx := context.Background()
	be := storetest.Backends()[1]
	sa, url := storetest.Fresh(t, be)
	sb := storetest.Open(t, url)
	ba := newBroker(t, sa, eventlog.Options{Buffer: 16})
	bb := newBroker(t, sb, eventlog.Options{Buffer: 16})
	tn := storetest.Tenant(t, sa, "a", 0)
	other := storetest.Tenant(t, sa, "b", 0)
	feed, err := bb.SubscribeTenant(ctx, tn.ID)
	must(t, "SubscribeTenant", err)
	otherFeed, err := bb.SubscribeTenant(ctx, other.ID)
	must(t, "SubscribeTenant(other)", err)

	j := storetest.Job(t, sa, tn.ID)
	onB, err := bb.Subscribe(ctx, j.ID, 0)
	must(t, "Subscribe on B", err)
	onA, err := ba.Subscribe(ctx, j.ID, 0)
	must(t, "Subscribe on A", err)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			brk := ba
			if i%3 == 0 {
				brk = bb
			}
			if _, err := brk.Append(ctx, j.ID, tn.ID, []store.EventInput{msg(i), msg(i)}); err != nil {
				t.Errorf("Append = %v", err)
			}
		}
	}()
	readUntil(t, onB, 1, 201)
	readUntil(t, onA, 1, 201)
	<-done

	// The dashboard feed on B sees A's transitions, and only its tenant's.
	_, err = sa.TransitionJob(ctx, j.ID, store.JobPending, store.JobCreating, "", nil)
	must(t, "TransitionJob", err)
	wantState(t, feed, j.ID, store.JobPending)
	wantState(t, feed, j.ID, store.JobCreating)
	e, err := onB.Next(ctxTimeout(t))
	if err != nil || e.Type != store.EventJobState || e.Seq != 202 {
		t.Errorf("job stream on B after the transition: %+v, %v; want job.state seq 202", e, err)
	}
	nctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if e, err := otherFeed.Next(nctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("other tenant's feed got %+v, %v; want nothing", e, err)
	}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantState reads a job.state event to state to for job from feed.
func wantState(t *testing.T, feed *eventlog.TenantSubscription, jobID string, to store.JobStatus) {
	t.Helper()
	e, err := feed.Next(ctxTimeout(t))
	if err != nil {
		t.Fatalf("feed.Next = %v; want %s → %s", err, jobID, to)
	}
	var sc store.StateChange
	if err := json.Unmarshal(e.Data, &sc); err != nil || e.JobID != jobID || sc.To != to || e.Type != store.EventJobState {
		t.Errorf("feed.Next = %+v (%v); want job.state of %s to %s", e, err, jobID, to)
	}
}

func TestTenantFeed(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s, _ := storetest.Fresh(t, be)
		b := newBroker(t, s, eventlog.Options{Buffer: 2})
		tn := storetest.Tenant(t, s, "a", 0)
		other := storetest.Tenant(t, s, "b", 0)
		feed, err := b.SubscribeTenant(ctx, tn.ID)
		must(t, "SubscribeTenant", err)
		j := storetest.Job(t, s, tn.ID)
		storetest.Job(t, s, other.ID)
		_, err = b.Append(ctx, j.ID, tn.ID, []store.EventInput{msg(1)}) // not a state change
		must(t, "Append", err)
		_, err = s.TransitionJob(ctx, j.ID, store.JobPending, store.JobCreating, "", nil)
		must(t, "TransitionJob", err)
		wantState(t, feed, j.ID, store.JobPending)
		wantState(t, feed, j.ID, store.JobCreating)

		// A reader that falls behind sees each job's latest state.
		var ids []string
		for range 3 {
			ids = append(ids, storetest.Job(t, s, tn.ID).ID)
		}
		for _, id := range ids {
			_, err := s.TransitionJob(ctx, id, store.JobPending, store.JobCancelled, "user", nil)
			must(t, "TransitionJob", err)
		}
		got := map[string]store.JobStatus{}
		for range 3 {
			e, err := feed.Next(ctxTimeout(t))
			must(t, "feed.Next", err)
			var sc store.StateChange
			must(t, "unmarshal", json.Unmarshal(e.Data, &sc))
			got[e.JobID] = sc.To
		}
		for _, id := range ids {
			if got[id] != store.JobCancelled {
				t.Errorf("feed: job %s last seen %q; want cancelled (got %v)", id, got[id], got)
			}
		}
	})
}

func TestAppendRedactsAndScopes(t *testing.T) {
	forBackends(t, func(t *testing.T, be storetest.Backend) {
		ctx := context.Background()
		s, _ := storetest.Fresh(t, be)
		b := newBroker(t, s, eventlog.Options{Redactor: eventlog.NewRedactor("s3cr3t-value")})
		tn := storetest.Tenant(t, s, "a", 0)
		other := storetest.Tenant(t, s, "b", 0)
		j := storetest.Job(t, s, tn.ID)
		b.Redactor().Add("another-secret")
		evs, err := b.Append(ctx, j.ID, tn.ID, []store.EventInput{
			{Type: "tool.call", Data: json.RawMessage(`{"tool":"bash","input":"curl -H 'Authorization: Bearer abcdefghijklmnop' -u s3cr3t-value x"}`)},
			{Type: "process.output", Data: json.RawMessage(`{"stream":"stdout","data":"OPENAI_API_KEY=sk-proj-0123456789abcdefghijklmn\nanother-secret\n"}`)},
		})
		must(t, "Append", err)
		stored, err := s.EventsAfter(ctx, j.ID, 1, 0)
		must(t, "EventsAfter", err)
		for i, e := range stored {
			for _, secret := range []string{"abcdefghijklmnop", "s3cr3t-value", "sk-proj", "another-secret"} {
				if strings.Contains(string(e.Data), secret) || strings.Contains(string(evs[i].Data), secret) {
					t.Errorf("stored event %d still holds %q: %s", e.Seq, secret, e.Data)
				}
			}
			if !strings.Contains(string(e.Data), eventlog.Mask) {
				t.Errorf("stored event %d has no mask: %s", e.Seq, e.Data)
			}
		}

		_, err = b.Append(ctx, j.ID, other.ID, []store.EventInput{msg(1)})
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Append(other tenant's job) = %v; want ErrNotFound", err)
		}
		_, err = b.Subscribe(ctx, "job_missing", 0)
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Subscribe(unknown job) = %v; want ErrNotFound", err)
		}
		_, err = b.Subscribe(ctx, j.ID, -1)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Subscribe(after -1) = %v; want ErrInvalid", err)
		}
	})
}

func TestSubscriptionEnds(t *testing.T) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, storetest.Backends()[0])
	b := newBroker(t, s, eventlog.Options{})
	tn := storetest.Tenant(t, s, "a", 0)
	j := storetest.Job(t, s, tn.ID)

	sctx, cancel := context.WithCancel(ctx)
	sub, err := b.Subscribe(sctx, j.ID, 1)
	must(t, "Subscribe", err)
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Next(ctx)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Next after the Subscribe context ended = %v; want ErrClosed", err)
	}

	sub2, err := b.Subscribe(ctx, j.ID, 0)
	must(t, "Subscribe", err)
	nctx, ncancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer ncancel()
	if _, err := sub2.Next(nctx); err != nil {
		t.Fatalf("Next = %v; want the creation event", err)
	}
	if _, err := sub2.Next(nctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next with nothing new = %v; want DeadlineExceeded", err)
	}
	b.Close()
	if _, err := sub2.Next(ctx); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Next after Broker.Close = %v; want ErrClosed", err)
	}
	if _, err := b.Subscribe(ctx, j.ID, 0); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Subscribe after Close = %v; want ErrClosed", err)
	}
}

func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v", what, err)
	}
}
