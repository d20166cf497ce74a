package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/corral-sh/corral/internal/agent"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/eventlog"
	"github.com/corral-sh/corral/internal/forge"
	"github.com/corral-sh/corral/internal/store"
)

// Defaults for Options' zero fields.
const (
	DefaultWorkers         = 4
	DefaultLease           = 30 * time.Second
	DefaultRetention       = 7 * 24 * time.Hour
	DefaultHeartbeat       = 5 * time.Second
	DefaultHeartbeatMisses = 3
	DefaultSlowMisses      = 12
	DefaultTimeout         = time.Hour
	DefaultMaxAttempts     = 3
	DefaultPoll            = time.Second
	DefaultRetryBackoff    = time.Second
)

// Options configure a Manager.
type Options struct {
	Store     *store.Store
	Broker    *eventlog.Broker
	Sandboxes Sandboxes
	// WorkerID names this replica's workers in job claims. It must be the
	// same across restarts of one replica (that is how Recover knows its
	// own jobs) and differ between replicas. Default: the host name plus a
	// hash of ArtifactsDir.
	WorkerID string
	// Workers is how many jobs this replica runs at once (the global
	// limit; tenants' max_concurrent_jobs apply on top, across replicas).
	Workers int
	// Lease is how long a claim lasts without renewal; the guardian
	// renews every Lease/3.
	Lease time.Duration
	// ArtifactsDir holds the artifact zips, <job id>.zip. Required.
	ArtifactsDir string
	// Retention is how long artifact zips are kept.
	Retention time.Duration
	// Heartbeat is how often the sandboxd of each running job is probed;
	// HeartbeatMisses probes failing in a row fail the job sandbox_lost.
	// Probes that only time out while the runtime still runs the sandbox
	// (a loaded machine, most often) count towards SlowMisses instead.
	Heartbeat       time.Duration
	HeartbeatMisses int
	SlowMisses      int
	// IdleTimeout: a running job with no event for this long gets a
	// system message (a nudge), and fails idle_timeout after as long
	// again. 0 turns it off.
	IdleTimeout time.Duration
	// DefaultTimeout is a job's wall-clock limit when it sets no timeout_s.
	DefaultTimeout time.Duration
	// MaxAttempts bounds sandbox creation attempts per job.
	MaxAttempts int
	// RetryBackoff is the wait before the second creation attempt; it
	// doubles per attempt, up to 30 s.
	RetryBackoff time.Duration
	// Poll is how often the dispatcher looks for jobs submitted to other
	// replicas (local submissions wake it at once).
	Poll time.Duration
	// Agents are the LLM agents this replica runs, by name
	// (cpapi.AgentBuiltin, cpapi.AgentClaudeCode, …); script always runs.
	// A job naming an agent missing here is refused (422).
	Agents map[string]agent.Agent
	// AgentBudget limits every agent job (steps, tokens); zero fields
	// leave the agent's defaults.
	AgentBudget agent.Budget
	// Secrets gives jobs the tenant secrets they name (job secrets and a
	// repository's token); jobs naming secrets are refused without it.
	Secrets Secrets
	// Forge opens the pull requests of repository jobs; without one the
	// branch is pushed and the result says no pull request was opened.
	Forge forge.Forge
	Log   *slog.Logger
}

// Manager runs jobs. Its methods are safe for concurrent use.
type Manager struct {
	opts   Options
	st     *store.Store
	broker *eventlog.Broker
	sb     Sandboxes
	log    *slog.Logger

	wake chan struct{} // capacity 1: "look for work"

	mu      sync.Mutex         // guards the fields below
	runners map[string]*runner // this replica's jobs, by id
	runCtx  context.Context    // Run's context while it accepts runners; nil otherwise
	ran     bool               // Run was called
	queued  []*runner          // recovered before Run
	rwg     sync.WaitGroup     // runner goroutines; Add under mu while runCtx != nil
}

// New returns a Manager; it starts nothing until Run.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Broker == nil || opts.Sandboxes == nil {
		return nil, errors.New("jobs: Store, Broker and Sandboxes are required")
	}
	if opts.ArtifactsDir == "" {
		return nil, errors.New("jobs: ArtifactsDir is required")
	}
	dir, err := filepath.Abs(opts.ArtifactsDir)
	if err != nil {
		return nil, fmt.Errorf("jobs: artifacts dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("jobs: artifacts dir: %w", err)
	}
	opts.ArtifactsDir = dir
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		sum := sha256.Sum256([]byte(dir))
		opts.WorkerID = host + "/" + hex.EncodeToString(sum[:4])
	}
	setDefault(&opts.Workers, DefaultWorkers)
	setDefault(&opts.Lease, DefaultLease)
	setDefault(&opts.Retention, DefaultRetention)
	setDefault(&opts.Heartbeat, DefaultHeartbeat)
	setDefault(&opts.HeartbeatMisses, DefaultHeartbeatMisses)
	setDefault(&opts.SlowMisses, max(DefaultSlowMisses, opts.HeartbeatMisses))
	setDefault(&opts.DefaultTimeout, DefaultTimeout)
	setDefault(&opts.MaxAttempts, DefaultMaxAttempts)
	setDefault(&opts.RetryBackoff, DefaultRetryBackoff)
	setDefault(&opts.Poll, DefaultPoll)
	if opts.IdleTimeout < 0 {
		opts.IdleTimeout = 0
	}
	if opts.DefaultTimeout > MaxTimeout {
		return nil, fmt.Errorf("jobs: DefaultTimeout %v is over the %v limit", opts.DefaultTimeout, MaxTimeout)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		opts: opts, st: opts.Store, broker: opts.Broker, sb: opts.Sandboxes,
		log:     opts.Log.With("worker", opts.WorkerID),
		wake:    make(chan struct{}, 1),
		runners: map[string]*runner{},
	}, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// WorkerID is the id this Manager claims jobs under.
func (m *Manager) WorkerID() string { return m.opts.WorkerID }

// Run runs the dispatcher, the guardian and the jobs until ctx ends, then
// waits for every goroutine it started. Jobs still running are left as
// they are, for Recover in the next process. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.ran {
		m.mu.Unlock()
		return errors.New("jobs: Run called twice")
	}
	m.ran, m.runCtx = true, ctx
	for _, r := range m.queued {
		m.launchLocked(r)
	}
	m.queued = nil
	m.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { m.dispatch(ctx) })
	wg.Go(func() { m.guard(ctx) })
	wg.Wait() // both return once ctx is done

	m.mu.Lock()
	m.runCtx = nil // no runner starts from now on
	m.mu.Unlock()
	m.rwg.Wait()
	return nil
}

// dispatch claims jobs while this replica has a free worker slot.
func (m *Manager) dispatch(ctx context.Context) {
	backoff := time.Duration(0)
	t := time.NewTimer(m.opts.Poll)
	defer t.Stop()
	for {
		for m.freeSlot() {
			j, err := m.st.ClaimJob(ctx, m.opts.WorkerID, m.opts.Lease)
			if errors.Is(err, errdefs.ErrNotFound) {
				backoff = 0
				break
			}
			if err != nil {
				if ctx.Err() == nil {
					m.log.Error("jobs: claiming a job failed", "err", err)
				}
				backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
				break
			}
			backoff = 0
			if r := newRunner(m, j, false); !m.start(r) { // Run is ending
				r.base = context.WithoutCancel(ctx)
				r.release()
			}
		}
		t.Reset(max(backoff, m.opts.Poll))
		if backoff > 0 { // a failing store: wait it out, ignoring wake-ups
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-t.C:
		}
	}
}

// poke wakes the dispatcher.
func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) freeSlot() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runCtx != nil && len(m.runners) < m.opts.Workers
}

// start registers r and runs it, or queues it until Run if Run has not
// started. It reports false if r's job is already handled here, or Run has
// ended.
func (m *Manager) start(r *runner) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runners[r.id] != nil {
		return false
	}
	if m.runCtx == nil {
		if m.ran {
			return false
		}
		for _, q := range m.queued {
			if q.id == r.id {
				return false
			}
		}
		m.queued = append(m.queued, r)
		return true
	}
	m.launchLocked(r)
	return true
}

// launchLocked registers r and starts its goroutine. m.mu is held and
// m.runCtx is set.
func (m *Manager) launchLocked(r *runner) {
	r.begin(m.runCtx)
	m.runners[r.id] = r
	m.rwg.Go(func() {
		defer m.finished(r)
		r.run()
	})
}

// finished unregisters r and wakes the dispatcher: a slot is free.
func (m *Manager) finished(r *runner) {
	m.mu.Lock()
	if m.runners[r.id] == r {
		delete(m.runners, r.id)
	}
	m.mu.Unlock()
	m.poke()
}

// local returns the runner of job id in this replica, or nil.
func (m *Manager) local(id string) *runner {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runners[id]
}

// queuedOrLocal reports whether job id is handled in this replica.
func (m *Manager) queuedOrLocal(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runners[id] != nil {
		return true
	}
	for _, q := range m.queued {
		if q.id == id {
			return true
		}
	}
	return false
}

// snapshot returns this replica's runners.
func (m *Manager) snapshot() []*runner {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := make([]*runner, 0, len(m.runners))
	for _, r := range m.runners {
		rs = append(rs, r)
	}
	return rs
}

// removeSandbox deletes a job's sandbox, logging a failure: a leftover
// sandbox is the sandbox service's to reap (it carries the job's id).
func (m *Manager) removeSandbox(ctx context.Context, tenantID, jobID, sandboxID string) {
	if sandboxID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := m.sb.Delete(ctx, tenantID, sandboxID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		m.log.Warn("jobs: deleting the sandbox failed", "job", jobID, "sandbox", sandboxID, "err", err)
	}
}
