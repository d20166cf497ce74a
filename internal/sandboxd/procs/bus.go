package procs

import (
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Event is one process lifecycle event. Seq starts at 1 and has no gaps.
type Event struct {
	Seq     uint64
	Type    string // sandboxapi.EventProcess*
	Process sandboxapi.Process
}

// busSize is how many recent events are kept for subscribers that resume.
const busSize = 4096

// bus is the lifecycle event log: a ring of the last busSize events that
// subscribers read from their own position, like outlog. Publishing never
// waits for subscribers.
type bus struct {
	mu      sync.Mutex
	ring    []Event
	next    uint64 // seq of the next event
	notify  chan struct{}
	waiting bool
}

func newBus() *bus { return &bus{ring: make([]Event, busSize), next: 1, notify: make(chan struct{})} }

func (b *bus) publish(typ string, p sandboxapi.Process) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ring[b.next%busSize] = Event{Seq: b.next, Type: typ, Process: p}
	b.next++
	if b.waiting {
		close(b.notify)
		b.notify = make(chan struct{})
		b.waiting = false
	}
}

// since returns the events after seq `after` (at most max), whether some
// were already dropped from the ring, and, when there are none yet, a
// channel closed by the next publish.
func (b *bus) since(after uint64, max int) (evs []Event, gap bool, wait <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := uint64(1)
	if b.next > busSize {
		first = b.next - busSize
	}
	from := after + 1
	if from < first {
		from, gap = first, true
	}
	if from > b.next { // a seq from the future (e.g. a previous daemon): start over
		from = first
	}
	for s := from; s < b.next && len(evs) < max; s++ {
		evs = append(evs, b.ring[s%busSize])
	}
	if len(evs) == 0 {
		b.waiting = true
		wait = b.notify
	}
	return evs, gap, wait
}

func (b *bus) last() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next - 1
}
