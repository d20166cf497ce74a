// Package pool keeps warm sandboxes ready so a claim does not wait for a
// sandbox to start.
//
// A pool holds up to Size ready sandboxes for each Key (template,
// resources, network) it is asked to keep warm. Claim takes one in O(1)
// (a channel receive plus one health check over the socket) and wakes that
// key's filler, which creates a replacement in the background; with none
// ready, Claim creates one on the spot. Pooled sandboxes are made without
// env or labels: those belong to the claim, not the fill — Claim returns
// them on the Sandbox (Env, Labels) for the caller to pass to every
// process it starts, so secrets never sit in a sandbox nobody claimed. A
// claimed sandbox is the caller's: it is deleted when done, never
// returned to the pool.
//
// Lifetimes: each key has one filler goroutine, started by Warm and
// stopped by Close, which also deletes every unclaimed sandbox.
package pool

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/runtime"
)

// Key identifies interchangeable sandboxes.
type Key struct {
	Template  string
	Resources runtime.Resources
	Network   string
}

// KeyOf returns the pool key of a spec.
func KeyOf(s runtime.Spec) Key {
	n := s.Network
	if n == "" {
		n = runtime.NetworkNone
	}
	return Key{Template: s.Template, Resources: s.Resources, Network: n}
}

// Claimed is a sandbox handed to a caller, with the claim's own env and
// labels to apply.
type Claimed struct {
	*runtime.Sandbox
	Env  map[string]string
	Warm bool // it came from the pool rather than being created for the claim
}

// Pool keeps sandboxes of one runtime warm.
type Pool struct {
	rt   runtime.Runtime
	size int
	log  *slog.Logger

	mu     sync.Mutex
	keys   map[Key]*queue
	closed bool
	wg     sync.WaitGroup
	stop   context.CancelFunc
	ctx    context.Context
}

type queue struct {
	ready chan *runtime.Sandbox
	wake  chan struct{}
}

// New returns a pool keeping size ready sandboxes per warmed key.
func New(rt runtime.Runtime, size int, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{rt: rt, size: size, log: log, keys: map[Key]*queue{}, ctx: ctx, stop: cancel}
}

// Warm starts keeping sandboxes of key ready. It returns at once.
func (p *Pool) Warm(key Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.keys[key] != nil {
		return
	}
	q := &queue{ready: make(chan *runtime.Sandbox, p.size), wake: make(chan struct{}, 1)}
	p.keys[key] = q
	p.wg.Go(func() { p.fill(key, q) })
}

// Ready returns how many sandboxes of key are ready now.
func (p *Pool) Ready(key Key) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.keys[key]; q != nil {
		return len(q.ready)
	}
	return 0
}

// fill keeps q topped up until the pool closes. Failures back off, so a
// broken engine does not spin.
func (p *Pool) fill(key Key, q *queue) {
	backoff := 100 * time.Millisecond
	for {
		for len(q.ready) < cap(q.ready) {
			sb, err := p.rt.Create(p.ctx, runtime.Spec{Template: key.Template, Resources: key.Resources,
				Network: key.Network, Labels: map[string]string{"corral.pool": "1"}})
			if p.ctx.Err() != nil {
				if err == nil {
					p.discard(sb)
				}
				return
			}
			if err != nil {
				p.log.Warn("pool: creating a warm sandbox failed", "template", key.Template, "err", err)
				select {
				case <-time.After(backoff):
				case <-p.ctx.Done():
					return
				}
				backoff = min(backoff*2, 30*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			q.ready <- sb
		}
		select {
		case <-q.wake:
		case <-p.ctx.Done():
			return
		}
	}
}

// Claim returns a sandbox for spec: a ready one when the pool keeps spec's
// key warm and has one, else a new one. spec.ID must be empty for a warm
// claim (a pooled sandbox already has its id).
func (p *Pool) Claim(ctx context.Context, spec runtime.Spec) (*Claimed, error) {
	p.mu.Lock()
	q := p.keys[KeyOf(spec)]
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errors.New("pool: closed")
	}
	if q != nil && spec.ID == "" {
		for {
			var sb *runtime.Sandbox
			select {
			case sb = <-q.ready:
			default:
			}
			if sb == nil {
				break
			}
			select { // refill in the background
			case q.wake <- struct{}{}:
			default:
			}
			if alive(ctx, sb) {
				sb.Labels = maps.Clone(spec.Labels)
				return &Claimed{Sandbox: sb, Env: maps.Clone(spec.Env), Warm: true}, nil
			}
			p.log.Warn("pool: a warm sandbox died while waiting; discarding it", "id", sb.ID)
			p.discard(sb)
		}
	}
	sb, err := p.rt.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &Claimed{Sandbox: sb, Env: maps.Clone(spec.Env)}, nil
}

func alive(ctx context.Context, sb *runtime.Sandbox) bool {
	c, err := client.New(sb.Endpoint, client.WithToken(sb.Token))
	if err != nil {
		return false
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.Health(hctx)
	return err == nil
}

func (p *Pool) discard(sb *runtime.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.rt.Delete(ctx, sb.ID); err != nil {
		p.log.Warn("pool: deleting a sandbox failed", "id", sb.ID, "err", err)
	}
}

// Close stops the fillers and deletes every unclaimed sandbox.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	var wg sync.WaitGroup
	for _, q := range p.keys {
		close(q.ready)
		for sb := range q.ready {
			wg.Go(func() { p.discard(sb) })
		}
	}
	wg.Wait()
}
