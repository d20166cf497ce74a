package sandboxes

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// Dial returns how to reach the daemon of the tenant's sandbox id: its
// endpoint as runtime.Sandbox.Endpoint gives it ("unix:/path" or
// "http://host:port") and its bearer token. It counts as activity.
//
// Errors: ErrNotFound for an unknown sandbox or another tenant's;
// ErrConflict while it is still being created; ErrBadGateway when its
// runtime no longer has it running. The answer is cached for lookupTTL, so
// the proxy's requests rarely reach the database.
func (s *Service) Dial(ctx context.Context, tenantID, id string) (endpoint, token string, err error) {
	c, err := s.lookup(ctx, tenantID, id)
	if err != nil {
		return "", "", err
	}
	if err := s.touch(ctx, tenantID, id); err != nil {
		return "", "", err
	}
	return c.endpoint, c.token, nil
}

// Client returns an SDK client for the daemon of the tenant's sandbox id,
// one per sandbox, reused while its endpoint and token stay the same. It
// counts as activity.
func (s *Service) Client(ctx context.Context, tenantID, id string) (*client.Client, error) {
	endpoint, token, err := s.Dial(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	return s.client(id, endpoint, token)
}

func (s *Service) client(id, endpoint, token string) (*client.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[id]; c != nil && c.endpoint == endpoint && c.token == token {
		return c.c, nil
	}
	c, err := client.New(endpoint, client.WithToken(token))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, err)
	}
	s.clients[id] = &sbClient{endpoint: endpoint, token: token, c: c}
	return c, nil
}

// Alive checks that the daemon of the tenant's sandbox id answers
// /v1/health: the job guardian's heartbeat. It does not count as activity.
//
// A sandbox that cannot be looked up or whose daemon does not answer
// before ctx ends, while its runtime still has it running (or cannot
// tell), is slow, not gone: the error is then of class ErrTimeout. A
// loaded machine, the control plane's own store included, looks like that;
// a sandbox the runtime no longer runs, or whose daemon refuses
// connections, does not (ErrBadGateway).
func (s *Service) Alive(ctx context.Context, tenantID, id string) error {
	err := s.health(ctx, tenantID, id)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && s.stillRunning(ctx, tenantID, id) {
		return errdefs.Wrap(errdefs.ErrTimeout, err, fmt.Sprintf("sandbox %s is slow to answer; its runtime has it running", id))
	}
	return err
}

// health looks sandbox id up and asks its daemon for /v1/health.
func (s *Service) health(ctx context.Context, tenantID, id string) error {
	cn, err := s.lookup(ctx, tenantID, id)
	if err != nil {
		return err
	}
	c, err := s.client(id, cn.endpoint, cn.token)
	if err != nil {
		return err
	}
	if _, err := c.Health(ctx); err != nil {
		return errdefs.Wrap(errdefs.ErrBadGateway, err, fmt.Sprintf("sandbox %s does not answer", id))
	}
	return nil
}

// stillRunning asks id's runtime afresh (not the lookup cache) whether it
// runs the sandbox; an unknown status counts as running. It has its own
// bound, since ctx may have just ended.
func (s *Service) stillRunning(ctx context.Context, tenantID, id string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runtimeAskTimeout)
	defer cancel()
	rec, err := s.store.GetSandbox(ctx, tenantID, id)
	if err != nil {
		return false
	}
	rt, err := s.runtime(rec)
	if err != nil {
		return false
	}
	sb, err := rt.Get(ctx, id)
	return err == nil && (sb.Status == runtime.StatusRunning || sb.Status == runtime.StatusUnknown)
}

// Hold marks a request or connection to sandbox id as in progress until
// release is called: a sandbox with one open is never idle. The proxy holds
// each request for its whole life, so a long SSE stream or WebSocket keeps
// its sandbox alive.
func (s *Service) Hold(id string) (release func()) {
	s.mu.Lock()
	a := s.activityOf(id)
	a.open++
	a.last = s.now()
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		a.open--
		a.last = s.now()
		s.mu.Unlock()
	}
}

// activityOf returns id's activity entry, making it. mu must be held.
func (s *Service) activityOf(id string) *activity {
	a := s.active[id]
	if a == nil {
		a = &activity{}
		s.active[id] = a
	}
	return a
}

// lookup returns where sandbox id's daemon is, from the cache when fresh.
func (s *Service) lookup(ctx context.Context, tenantID, id string) (*conn, error) {
	s.mu.Lock()
	c, gen := s.conns[id], s.gen
	s.mu.Unlock()
	if c != nil && s.now().Sub(c.fetched) < lookupTTL {
		if c.tenant != tenantID {
			return nil, errdefs.NotFoundf("sandbox %q not found", id)
		}
		return c, nil
	}

	rec, err := s.store.GetSandbox(ctx, tenantID, id)
	if err != nil {
		return nil, fmt.Errorf("look up sandbox: %w", err)
	}
	if rec.Status != StatusRunning {
		return nil, errdefs.Conflictf("sandbox %s is %s, not running yet", id, rec.Status)
	}
	rt, err := s.runtime(rec)
	if err != nil {
		return nil, err
	}
	sb, err := rt.Get(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		// The cause is kept as text only: its class (not found) must not
		// make this a 404, since the record does exist.
		return nil, errdefs.Wrap(errdefs.ErrBadGateway, fmt.Errorf("runtime %s: %v", rec.Runtime, err),
			fmt.Sprintf("sandbox %s is gone: runtime %s no longer has it", id, rec.Runtime))
	}
	if err != nil {
		return nil, fmt.Errorf("look up sandbox %s in runtime %s: %w", id, rec.Runtime, err)
	}
	if sb.Status == runtime.StatusStopped { // unknown: try it, the dial tells
		return nil, errdefs.Wrap(errdefs.ErrBadGateway, nil,
			fmt.Sprintf("sandbox %s is %s: its daemon is not running", id, sb.Status))
	}
	c = &conn{tenant: tenantID, endpoint: sb.Endpoint, token: sb.Token, fetched: s.now()}
	s.mu.Lock()
	if s.gen == gen { // no sandbox was deleted meanwhile, perhaps this one
		s.conns[id] = c
	}
	s.mu.Unlock()
	return c, nil
}

// touch records activity on id: in memory always, in the store at most
// every touchEvery. A failed write is logged, not returned, except that a
// record gone from the store means the sandbox is gone.
func (s *Service) touch(ctx context.Context, tenantID, id string) error {
	s.mu.Lock()
	a := s.activityOf(id)
	now := s.now()
	a.last = now
	write := now.Sub(a.stored) >= touchEvery
	if write {
		a.stored = now
	}
	s.mu.Unlock()
	if !write {
		return nil
	}
	err := s.store.TouchSandbox(ctx, tenantID, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		s.forget(id)
		return fmt.Errorf("look up sandbox: %w", err)
	}
	if err != nil {
		s.log.Warn("sandboxes: recording activity failed", "id", id, "err", err)
	}
	return nil
}
