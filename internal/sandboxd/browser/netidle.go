package browser

import (
	"context"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
)

const (
	// IdleQuiet is how long no request may be in flight for the network
	// to count as idle (Playwright's and Puppeteer's networkidle).
	IdleQuiet = 500 * time.Millisecond
	// maxTracked bounds the requests a tracker remembers; a page that
	// starts more without finishing any is treated as never idle.
	maxTracked = 10000
)

// netTracker follows a tab's requests from its Network events: in flight
// from requestWillBeSent until loadingFinished or loadingFailed. observe
// runs in chromedp's event loop of the tab and only takes the lock.
type netTracker struct {
	mu       sync.Mutex
	inflight map[network.RequestID]struct{}
	last     time.Time     // last change: a request began or ended
	changed  chan struct{} // closed and replaced on every change
}

func newNetTracker() *netTracker {
	return &netTracker{inflight: map[network.RequestID]struct{}{}, last: time.Now(), changed: make(chan struct{})}
}

// observe is a chromedp listener: it must return fast and send nothing.
func (n *netTracker) observe(ev any) {
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		n.update(func() {
			if len(n.inflight) < maxTracked {
				n.inflight[ev.RequestID] = struct{}{}
			}
		})
	case *network.EventLoadingFinished:
		n.update(func() { delete(n.inflight, ev.RequestID) })
	case *network.EventLoadingFailed:
		n.update(func() { delete(n.inflight, ev.RequestID) })
	}
}

func (n *netTracker) update(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f()
	n.last = time.Now()
	close(n.changed)
	n.changed = make(chan struct{})
}

// waitIdle returns when no request has been in flight for quiet, or with
// ctx's error.
func (n *netTracker) waitIdle(ctx context.Context, quiet time.Duration) error {
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		n.mu.Lock()
		busy, last, changed := len(n.inflight) > 0, n.last, n.changed
		n.mu.Unlock()
		wait := quiet - time.Since(last)
		if !busy && wait <= 0 {
			return nil
		}
		if busy {
			wait = quiet
		}
		timer.Reset(wait)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
