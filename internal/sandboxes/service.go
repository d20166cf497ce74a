// Package sandboxes is the control plane's sandbox service (DESIGN.md §3):
// tenants create, list, extend and delete sandboxes on the configured
// runtimes, and reach each sandbox's daemon through Dial (the HTTP proxy)
// or Client (the job engine). It is domain code: it returns errdefs
// classes and never imports net/http; internal/sandboxproxy is its HTTP
// side.
//
// # Records and sandboxes
//
// The store holds a record per sandbox; the runtime holds the sandbox. A
// record is written first, in status "creating", before the runtime is
// asked for anything, so a crash mid-create always leaves a record that
// Reconcile can clean up. Once the runtime answers, the record becomes
// "running" (with its hard deadline, expires_at, when timeout_s was given).
// A sandbox claimed from a warm pool already has an id of its own: its
// record replaces the placeholder. Deleting removes the sandbox at the
// runtime first, then the record.
//
// # Lifetimes
//
// A Service starts no goroutine by itself. Run is the expiry loop: it runs
// in its caller's goroutine until ctx ends, deleting sandboxes past their
// deadline and idle ones (no request or connection for IdleTimeout; a job's
// sandbox, labelled corral.job, is exempt: the job engine deletes it).
// Reconcile is meant to run once at start, before pools are warmed (an
// unclaimed warm sandbox has no record and would be taken for an orphan).
//
// # Locking and caches
//
// One mutex, mu, guards every in-memory map: the lookup cache (sandbox id →
// tenant, endpoint and token, trusted for lookupTTL so the proxy does not
// query the database per request; dropped at once when this process
// deletes the sandbox), the activity table (last request and open
// connections per sandbox, written to the store at most every touchEvery),
// the per-sandbox SDK clients, the ids being created, and the delete hooks.
// No store or runtime call is made while mu is held.
package sandboxes

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/pool"
	"github.com/corral-sh/corral/internal/store"
)

// Record statuses.
const (
	StatusCreating = "creating"
	StatusRunning  = "running"
)

// Labels the service sets; a request's own labels may not use the corral.
// prefix.
const (
	LabelJob  = "corral.job"  // the job whose sandbox this is; exempt from the idle timeout
	LabelPool = "corral.pool" // set by internal/runtime/pool on warm sandboxes
)

// Defaults of Options.
const (
	DefaultIdleTimeout = 15 * time.Minute
	DefaultMaxTimeout  = 24 * time.Hour
	DefaultSweepEvery  = 30 * time.Second
)

const (
	// lookupTTL is how long a sandbox's endpoint and token are trusted
	// without asking the store again. A delete by another replica is
	// noticed within it (meanwhile the proxy answers 502).
	lookupTTL = 5 * time.Second
	// runtimeAskTimeout bounds asking a runtime whether a sandbox whose
	// daemon did not answer in time still runs.
	runtimeAskTimeout = 10 * time.Second
	// touchEvery is how often this process writes a sandbox's activity to
	// the store; the expiry loop also sees this process's newer activity.
	touchEvery = 5 * time.Second
	// staleCreating is how long a record may stay "creating" before the
	// expiry loop takes it for the leftover of a crashed create.
	staleCreating = 10 * time.Minute
	// cleanupTimeout bounds deletes done on the way out of a failure, with
	// a context that outlives the caller's.
	cleanupTimeout = time.Minute
)

// Options configure a Service.
type Options struct {
	Store *store.Store
	// Runtimes are the usable backends by name; a record's runtime is one
	// of these names.
	Runtimes map[string]runtime.Runtime
	// Default is the runtime used when a request names none; with one
	// runtime and Default "", that one.
	Default string
	// Pools are warm pools by runtime name (optional). A request without
	// env is served from its runtime's pool when the pool has one ready.
	Pools map[string]*pool.Pool
	// DefaultTemplate is the template when a request names none;
	// runtime.DefaultTemplate if "".
	DefaultTemplate string
	// IdleTimeout deletes a sandbox after this long without a request or
	// connection; DefaultIdleTimeout if 0.
	IdleTimeout time.Duration
	// MaxTimeout bounds timeout_s, at creation and when extending;
	// DefaultMaxTimeout if 0.
	MaxTimeout time.Duration
	// SweepEvery is the period of the expiry loop; DefaultSweepEvery if 0.
	SweepEvery time.Duration
	// Now is the clock; time.Now if nil. Tests share one with the store.
	Now func() time.Time
	// Log receives what the service did on its own (expiry, reconciling,
	// failed cleanups); slog.Default() if nil.
	Log *slog.Logger
}

// CreateOptions are the caller's side of a Create, beyond the request.
type CreateOptions struct {
	// JobID, when set, labels the sandbox corral.job=JobID: it then lives
	// as long as its job and is exempt from the idle timeout.
	JobID string
}

// Service manages tenants' sandboxes. It is safe for concurrent use.
type Service struct {
	store       *store.Store
	runtimes    map[string]runtime.Runtime
	names       []string // sorted keys of runtimes
	def         string
	pools       map[string]*pool.Pool
	template    string
	idleTimeout time.Duration
	maxTimeout  time.Duration
	sweepEvery  time.Duration
	now         func() time.Time
	log         *slog.Logger

	mu       sync.Mutex
	gen      uint64               // bumped by forget, so a lookup racing a delete does not cache
	conns    map[string]*conn     // lookup cache by sandbox id
	active   map[string]*activity // by sandbox id
	clients  map[string]*sbClient // SDK clients by sandbox id
	inflight map[string]struct{}  // ids this process is creating right now
	hooks    map[int]func(id string)
	nextHook int
}

// conn is a cached lookup: the sandbox's tenant and how to reach its daemon.
type conn struct {
	tenant   string
	endpoint string
	token    string
	fetched  time.Time
}

// activity is what this process saw of a sandbox's use.
type activity struct {
	last   time.Time // last request start or end
	stored time.Time // last time this process wrote last_active_at
	open   int       // requests and connections in progress (Hold)
}

type sbClient struct {
	endpoint, token string
	c               *client.Client
}

// New returns a Service. Zero Options fields take the defaults above.
func New(o Options) *Service {
	s := &Service{
		store:       o.Store,
		runtimes:    maps.Clone(o.Runtimes),
		names:       slices.Sorted(maps.Keys(o.Runtimes)),
		def:         o.Default,
		pools:       maps.Clone(o.Pools),
		template:    o.DefaultTemplate,
		idleTimeout: o.IdleTimeout,
		maxTimeout:  o.MaxTimeout,
		sweepEvery:  o.SweepEvery,
		now:         o.Now,
		log:         o.Log,
		conns:       map[string]*conn{},
		active:      map[string]*activity{},
		clients:     map[string]*sbClient{},
		inflight:    map[string]struct{}{},
		hooks:       map[int]func(string){},
	}
	if s.def == "" && len(s.names) == 1 {
		s.def = s.names[0]
	}
	if s.template == "" {
		s.template = runtime.DefaultTemplate
	}
	if s.idleTimeout <= 0 {
		s.idleTimeout = DefaultIdleTimeout
	}
	if s.maxTimeout <= 0 {
		s.maxTimeout = DefaultMaxTimeout
	}
	if s.sweepEvery <= 0 {
		s.sweepEvery = DefaultSweepEvery
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// OnDelete registers fn to be called with the id of every sandbox this
// Service deletes (by Delete, expiry or Reconcile), after the runtime and
// the store forgot it; the proxy drops its connections to it. fn runs in
// the deleting goroutine and must not block. stop unregisters it.
func (s *Service) OnDelete(fn func(id string)) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nextHook
	s.nextHook++
	s.hooks[n] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.hooks, n)
	}
}

// forget drops everything this process cached about id and tells the
// delete hooks.
func (s *Service) forget(id string) {
	s.mu.Lock()
	s.gen++
	delete(s.conns, id)
	delete(s.clients, id)
	if a := s.active[id]; a != nil && a.open == 0 {
		delete(s.active, id)
	}
	hooks := slices.Collect(maps.Values(s.hooks))
	s.mu.Unlock()
	for _, fn := range hooks {
		fn(id)
	}
}

func (s *Service) setInflight(id string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.inflight[id] = struct{}{}
	} else {
		delete(s.inflight, id)
	}
}

// view turns a record into its API form.
func view(rec *store.Sandbox) *cpapi.Sandbox {
	sb := &cpapi.Sandbox{
		ID:        rec.ID,
		Status:    rec.Status,
		Runtime:   rec.Runtime,
		Template:  rec.Template,
		CreatedAt: rec.CreatedAt,
		Labels:    rec.Labels,
	}
	if !rec.ExpiresAt.IsZero() {
		at := rec.ExpiresAt
		sb.ExpiresAt = &at
	}
	return sb
}
