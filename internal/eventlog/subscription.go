package eventlog

import (
	"context"
	"fmt"
	"sync"

	"github.com/corral-sh/corral/internal/store"
)

// Subscription is a cursor over one job's events: Next returns them in seq
// order, each once, replaying stored ones first. One goroutine at a time may
// call Next; Close may be called from any goroutine.
//
// Invariant: queue holds events last-len(queue)+1 .. last, consecutive. In
// live mode publish appends to it; in catch-up mode (catchUp) publish only
// raises known, and Next refills the queue from the store once it is empty.
// The subscription leaves catch-up mode when a store read comes back short
// and nothing newer than last is known to exist.
type Subscription struct {
	b     *Broker
	jobID string
	max   int // queue bound and catch-up page size

	mu      sync.Mutex
	queue   []store.Event // queue[head:] are the undelivered events
	head    int
	last    int64 // seq of the newest event queued (or delivered)
	known   int64 // newest seq known to be committed
	catchUp bool
	closed  bool
	stop    func() bool // unregisters the context hook

	wake      chan struct{} // capacity 1: "something changed"
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func newSubscription(b *Broker, jobID string, after int64) *Subscription {
	return &Subscription{
		b: b, jobID: jobID, max: b.buf,
		last: after, known: after,
		catchUp: true, // the replay: read the store before taking live events
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

// closeWith closes s when ctx ends, without a goroutine of its own.
func (s *Subscription) closeWith(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
}

// JobID returns the job the subscription follows.
func (s *Subscription) JobID() string { return s.jobID }

// Next returns the next event, waiting for one if need be. It returns
// ctx.Err() if ctx ends first (the subscription stays usable), ErrClosed
// once the subscription is closed, and a store error if a catch-up read
// fails (the next call retries it).
func (s *Subscription) Next(ctx context.Context) (store.Event, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return store.Event{}, ErrClosed
		}
		if s.head < len(s.queue) {
			e := s.pop()
			s.mu.Unlock()
			return e, nil
		}
		if s.catchUp {
			from := s.last
			s.mu.Unlock()
			if err := s.fill(ctx, from); err != nil {
				return store.Event{}, err
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

// pop removes the oldest queued event; s.mu is held.
func (s *Subscription) pop() store.Event {
	e := s.queue[s.head]
	s.queue[s.head] = store.Event{} // let the data go
	s.head++
	switch {
	case s.head == len(s.queue):
		s.queue, s.head = s.queue[:0], 0
	case s.head >= 64 && 2*s.head >= len(s.queue):
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	return e
}

// fill reads the events after from from the store into the empty queue,
// and leaves catch-up mode if that made the subscription level.
func (s *Subscription) fill(ctx context.Context, from int64) error {
	evs, err := s.b.st.EventsAfter(ctx, s.jobID, from, s.max)
	if err != nil {
		return fmt.Errorf("eventlog: catch up job %s after %d: %w", s.jobID, from, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.last != from {
		return nil
	}
	for _, e := range evs {
		if e.Seq == s.last+1 {
			s.queue = append(s.queue, e)
			s.last = e.Seq
		}
	}
	s.known = max(s.known, s.last)
	if len(evs) < s.max && s.last >= s.known {
		s.catchUp = false
	}
	return nil
}

// offer takes events committed in this process (consecutive, in order).
func (s *Subscription) offer(evs []store.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	newest := evs[len(evs)-1].Seq
	if s.closed || newest <= s.last {
		return
	}
	for _, e := range evs {
		if s.catchUp {
			break
		}
		switch {
		case e.Seq <= s.last:
			continue
		case e.Seq != s.last+1, len(s.queue)-s.head >= s.max:
			s.catchUp = true // a gap, or the reader is behind: the store has it
		default:
			s.queue = append(s.queue, e)
			s.last = e.Seq
		}
	}
	s.known = max(s.known, newest)
	s.signal()
}

// position returns the seq of the newest event s has, and whether s is
// taking live events (not catching up).
func (s *Subscription) position() (last int64, live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, !s.catchUp && !s.closed
}

// notify takes news of events committed elsewhere, up to seq.
func (s *Subscription) notify(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || seq <= s.last {
		return
	}
	s.known = max(s.known, seq)
	s.catchUp = true
	s.signal()
}

// resync sends s back to the store: notifications may have been missed.
func (s *Subscription) resync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp = true
	s.signal()
}

// signal wakes Next; s.mu is held.
func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close ends the subscription; a Next waiting returns ErrClosed. It is
// idempotent.
func (s *Subscription) Close() error {
	s.closeOnce.Do(func() {
		s.b.removeJobSub(s)
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
