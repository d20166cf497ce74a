// Package eventlog is the live side of the job event log: it writes events
// through the store and fans them out to subscribers (SSE streams, `corral
// logs -f`, the dashboard) without ever letting a slow reader hold up a
// writer, and without losing or repeating an event.
//
// The store is the source of truth. Broker.Append redacts secrets, commits
// the events (internal/store assigns their seqs) and only then publishes
// them. A Subscription is a cursor over one job's log: it is registered for
// live events before it reads the stored ones it must replay, and it keeps
// the seq of the last event it queued, so that events arriving live which it
// already has are dropped, and a gap (events published out of order, or
// known only by their seq) sends it back to the store. Each subscription
// buffers at most Options.Buffer events; when a publish would overflow it,
// the subscription stops taking live events and switches to catch-up mode:
// Next re-reads the store from its last seq until it is level again. So a
// writer never waits for a reader, and a reader that falls behind costs the
// database reads, not memory.
//
// Replicas. With PostgreSQL, several control-plane replicas share one
// database; the store NOTIFYs every append (job id and seq) and the Broker
// LISTENs, so a subscriber on replica B learns of events appended on replica
// A and fetches them from the store: the Broker reads them once per
// notification for all its live subscribers of that job, and a subscriber
// that is further behind catches up by itself. With SQLite (one process)
// publication is in memory only.
//
// # Lifetimes and locking
//
// New starts one goroutine, the LISTEN loop (which returns at once on
// SQLite); Close stops it and closes every subscription. Subscriptions own
// no goroutine: Next runs in the caller's goroutine, so idle subscribers cost
// a few hundred bytes each. A subscription ends when Close is called, when
// the context given to Subscribe ends, or when the Broker closes; Next then
// returns ErrClosed. Whether a stream should end when its job finishes is
// the caller's decision.
//
// Broker.mu guards the subscriber maps; each subscription's mu guards its
// queue and cursor. Publishing holds Broker.mu for reading and takes each
// subscription's mu briefly, never blocking on a reader: the order is always
// Broker.mu, then a subscription's mu. Nothing is held while the store is
// read.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
)

// ErrClosed is returned by Next once the subscription or its Broker is
// closed, or the context given to Subscribe is done.
var ErrClosed = errors.New("eventlog: subscription closed")

// Options tune a Broker. The zero value is usable.
type Options struct {
	// Redactor scrubs event data before it is stored. Nil means a Redactor
	// with only the built-in token patterns.
	Redactor *Redactor
	// Buffer is how many events a subscription holds before it switches to
	// catch-up mode; it is also the page size of catch-up reads. 0 means 256.
	Buffer int
	Log    *slog.Logger
}

// Broker publishes a store's job events to subscribers. It is safe for
// concurrent use.
type Broker struct {
	st  *store.Store
	red *Redactor
	buf int
	log *slog.Logger

	mu      sync.RWMutex // guards jobs, tenants and closed
	jobs    map[string]map[*Subscription]struct{}
	tenants map[string]map[*TenantSubscription]struct{}
	closed  bool

	unwatch    func()
	stopListen context.CancelFunc
	listenDone chan struct{}
}

// New returns a Broker publishing st's events. On PostgreSQL it first waits,
// within ctx, until it listens for other replicas' appends.
func New(ctx context.Context, st *store.Store, opts Options) (*Broker, error) {
	b := &Broker{
		st:         st,
		red:        opts.Redactor,
		buf:        opts.Buffer,
		log:        opts.Log,
		jobs:       map[string]map[*Subscription]struct{}{},
		tenants:    map[string]map[*TenantSubscription]struct{}{},
		listenDone: make(chan struct{}),
	}
	if b.red == nil {
		b.red = NewRedactor()
	}
	if b.buf <= 0 {
		b.buf = 256
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.unwatch = st.Watch(b.publish)

	lctx, cancel := context.WithCancel(context.Background())
	b.stopListen = cancel
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(b.listenDone)
		err := st.Listen(lctx, func(a store.Appended) {
			if a.Resync {
				once.Do(func() { close(ready) })
			}
			b.fromReplica(lctx, a)
		})
		once.Do(func() { close(ready) })
		if err != nil {
			b.log.Error("eventlog: listen stopped", "err", err)
		}
	}()
	select {
	case <-ready:
		return b, nil
	case <-ctx.Done():
		b.Close()
		return nil, fmt.Errorf("eventlog: waiting to listen: %w", ctx.Err())
	}
}

// Close stops the Broker and closes every subscription. Append keeps working
// (it writes to the store) but publishes nothing.
func (b *Broker) Close() error {
	b.unwatch()
	b.stopListen()
	<-b.listenDone
	b.mu.Lock()
	b.closed = true
	var subs []*Subscription
	for _, m := range b.jobs {
		for s := range m {
			subs = append(subs, s)
		}
	}
	var tsubs []*TenantSubscription
	for _, m := range b.tenants {
		for s := range m {
			tsubs = append(tsubs, s)
		}
	}
	b.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	for _, s := range tsubs {
		s.Close()
	}
	return nil
}

// Redactor returns the Broker's redactor, for registering secrets.
func (b *Broker) Redactor() *Redactor { return b.red }

// Append redacts the events' data, appends them to job jobID's log, which
// must belong to tenantID (else ErrNotFound, nothing written; "" skips the
// check), and returns them as stored. They are durable before any
// subscriber sees them, and Append never waits for subscribers.
func (b *Broker) Append(ctx context.Context, jobID, tenantID string, in []store.EventInput) ([]store.Event, error) {
	red := make([]store.EventInput, len(in))
	for i, e := range in {
		red[i] = store.EventInput{Type: e.Type, Data: b.red.JSON(e.Data)}
	}
	evs, err := b.st.AppendTenantEvents(ctx, tenantID, jobID, red)
	if err != nil {
		return nil, fmt.Errorf("eventlog: append: %w", err)
	}
	return evs, nil
}

// publish hands a committed append to the subscribers it concerns. It runs
// in the committing goroutine (local appends) or the LISTEN goroutine (other
// replicas' appends) and never blocks. a.Events, when set, are consecutive
// and end at or before a.LastSeq; subscribers learn of the rest by seq only
// and read it from the store.
func (b *Broker) publish(a store.Appended) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if a.Resync {
		for _, m := range b.jobs {
			for s := range m {
				s.resync()
			}
		}
		for _, m := range b.tenants {
			for s := range m {
				s.resync()
			}
		}
		return
	}
	covered := len(a.Events) > 0 && a.Events[len(a.Events)-1].Seq >= a.LastSeq
	for s := range b.jobs[a.JobID] {
		if len(a.Events) > 0 {
			s.offer(a.Events)
		}
		if !covered {
			s.notify(a.LastSeq)
		}
	}
	if len(a.StateSeqs) == 0 {
		return
	}
	for s := range b.tenants[a.TenantID] {
		for _, seq := range a.StateSeqs {
			if len(a.Events) > 0 {
				if i := seq - a.Events[0].Seq; i >= 0 && i < int64(len(a.Events)) {
					s.offer(tenantItem{ev: a.Events[i]})
					continue
				}
			}
			s.offer(tenantItem{ev: store.Event{JobID: a.JobID, Seq: seq}, fetch: true})
		}
	}
}

// fromReplica publishes an append made by another replica, known by its
// last seq. Rather than let every subscriber of the job query the store, it
// reads the new events once, from the oldest position among the job's live
// (not catching-up) subscribers, if that is at most one buffer behind. It
// runs in the LISTEN goroutine; a failed read just leaves the subscribers to
// catch up on their own.
func (b *Broker) fromReplica(ctx context.Context, a store.Appended) {
	if !a.Resync {
		from := int64(-1)
		b.mu.RLock()
		for s := range b.jobs[a.JobID] {
			if last, live := s.position(); live && (from < 0 || last < from) {
				from = last
			}
		}
		b.mu.RUnlock()
		if n := a.LastSeq - from; from >= 0 && n > 0 && n <= int64(b.buf) {
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			evs, err := b.st.EventsAfter(fctx, a.JobID, from, int(n))
			cancel()
			if err == nil && len(evs) > 0 && evs[0].Seq == from+1 {
				a.Events = evs
			}
		}
	}
	b.publish(a)
}

// Subscribe returns a subscription to job jobID's events with seq > after:
// first those already stored, then live ones, each exactly once and in
// order. It ends when ctx is done or Close is called. An unknown job is
// ErrNotFound; the caller checks the job's tenant before subscribing.
func (b *Broker) Subscribe(ctx context.Context, jobID string, after int64) (*Subscription, error) {
	if after < 0 {
		return nil, errdefs.Invalidf("after must not be negative")
	}
	if _, err := b.st.LoadJob(ctx, jobID); err != nil {
		return nil, fmt.Errorf("eventlog: subscribe: %w", err)
	}
	s := newSubscription(b, jobID, after)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	m := b.jobs[jobID]
	if m == nil {
		m = map[*Subscription]struct{}{}
		b.jobs[jobID] = m
	}
	m[s] = struct{}{}
	b.mu.Unlock()
	s.closeWith(ctx)
	return s, nil
}

func (b *Broker) removeJobSub(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.jobs[s.jobID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.jobs, s.jobID)
		}
	}
}

// SubscribeTenant returns a subscription to the job.state events of all the
// tenant's jobs (the dashboard's feed), from now on. It ends when ctx is
// done or Close is called.
func (b *Broker) SubscribeTenant(ctx context.Context, tenantID string) (*TenantSubscription, error) {
	s := newTenantSubscription(b, tenantID)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	m := b.tenants[tenantID]
	if m == nil {
		m = map[*TenantSubscription]struct{}{}
		b.tenants[tenantID] = m
	}
	m[s] = struct{}{}
	b.mu.Unlock()
	s.closeWith(ctx)
	return s, nil
}

func (b *Broker) removeTenantSub(s *TenantSubscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.tenants[s.tenantID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.tenants, s.tenantID)
		}
	}
}
