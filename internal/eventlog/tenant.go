package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/corral-sh/corral/internal/store"
)

// ErrLagged is returned once by TenantSubscription.Next when state changes
// were dropped (the reader fell far behind, or the replica lost its LISTEN
// connection for a while); the subscription goes on afterwards. A dashboard
// should re-list the tenant's jobs.
var ErrLagged = errors.New("eventlog: state changes were dropped; re-list the jobs")

// TenantSubscription delivers the job.state events of one tenant's jobs, as
// they happen. It is a feed of current states, not a log: there is no
// tenant-wide seq to resume from, and when the reader falls behind, pending
// changes of one job collapse into its latest one, so a reader always ends
// up seeing every job's current state. Only if more than 16×Buffer distinct
// jobs are pending are the oldest dropped (then Next returns ErrLagged).
// One goroutine at a time may call Next.
type TenantSubscription struct {
	b        *Broker
	tenantID string
	max      int

	mu     sync.Mutex
	queue  []tenantItem
	head   int
	lagged bool
	closed bool
	stop   func() bool

	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// tenantItem is a job.state event, or, for an event committed on another
// replica, its job id and seq (fetch): Next reads it from the store.
type tenantItem struct {
	ev    store.Event
	fetch bool
}

func newTenantSubscription(b *Broker, tenantID string) *TenantSubscription {
	return &TenantSubscription{b: b, tenantID: tenantID, max: b.buf,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (s *TenantSubscription) closeWith(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
}

// Next returns the next job.state event of the tenant's jobs, waiting for
// one if need be. Errors: ctx.Err(), ErrClosed, ErrLagged (once per lapse),
// or a store error.
func (s *TenantSubscription) Next(ctx context.Context) (store.Event, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return store.Event{}, ErrClosed
		}
		if s.lagged {
			s.lagged = false
			s.mu.Unlock()
			return store.Event{}, ErrLagged
		}
		if s.head < len(s.queue) {
			it := s.queue[s.head]
			s.queue[s.head] = tenantItem{}
			s.head++
			if s.head == len(s.queue) {
				s.queue, s.head = s.queue[:0], 0
			}
			s.mu.Unlock()
			if !it.fetch {
				return it.ev, nil
			}
			evs, err := s.b.st.EventsAfter(ctx, it.ev.JobID, it.ev.Seq-1, 1)
			if err != nil {
				return store.Event{}, fmt.Errorf("eventlog: fetch job %s event %d: %w", it.ev.JobID, it.ev.Seq, err)
			}
			if len(evs) == 1 && evs[0].Seq == it.ev.Seq {
				return evs[0], nil
			}
			continue
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		case <-s.done:
		case <-s.wake:
		}
	}
}

// offer queues a state change, collapsing it into a pending one of the
// same job when the queue is full.
func (s *TenantSubscription) offer(it tenantItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if n := len(s.queue) - s.head; n >= s.max {
		for i := s.head; i < len(s.queue); i++ {
			if s.queue[i].ev.JobID == it.ev.JobID {
				if it.ev.Seq > s.queue[i].ev.Seq {
					s.queue[i] = it
				}
				s.signal()
				return
			}
		}
		if n >= 16*s.max {
			s.queue[s.head] = tenantItem{}
			s.head++
			s.lagged = true
		}
	}
	if s.head > 0 && len(s.queue) == cap(s.queue) {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	s.queue = append(s.queue, it)
	s.signal()
}

func (s *TenantSubscription) resync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lagged = true
	s.signal()
}

func (s *TenantSubscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close ends the subscription; it is idempotent.
func (s *TenantSubscription) Close() error {
	s.closeOnce.Do(func() {
		s.b.removeTenantSub(s)
		s.mu.Lock()
		s.closed = true
		s.queue, s.head = nil, 0
		stop := s.stop
		s.mu.Unlock()
		close(s.done)
		if stop != nil {
			stop()
		}
	})
	return nil
}
