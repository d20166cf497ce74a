package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// conformance is the suite every backend passes. Each case gets a fresh,
// empty database of the backend.
var conformance = []struct {
	name string
	fn   func(t *testing.T, b storetest.Backend)
}{
	{"MigrationsIdempotent", testMigrationsIdempotent},
	{"Tenants", testTenants},
	{"Tokens", testTokens},
	{"TenantIsolation", testTenantIsolation},
	{"CreateJob", testCreateJob},
	{"TransitionCAS", testTransitionCAS},
	{"TransitionConcurrent", testTransitionConcurrent},
	{"ClaimExclusive", testClaimExclusive},
	{"ClaimLease", testClaimLease},
	{"ClaimTenantLimit", testClaimTenantLimit},
	{"AdoptJob", testAdoptJob},
	{"EventsGapFree", testEventsGapFree},
	{"EventsBatchAndPaging", testEventsBatchAndPaging},
	{"EventsBadInput", testEventsBadInput},
	{"ListJobsPaging", testListJobsPaging},
	{"ListJobsBadInput", testListJobsBadInput},
	{"Sandboxes", testSandboxes},
	{"Watch", testWatch},
	{"Listen", testListen},
}

func TestConformance(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
			}
		})
	}
}

func TestOpenBadURL(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"", "mysql://x/y", "sqlite::memory:", "sqlite:", ":memory:", "sqlite:/tmp/a?b.db"} {
		if s, err := store.Open(ctx, u, nil); !errors.Is(err, errdefs.ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q) = %v; want ErrInvalid", u, err)
		}
	}
	if _, err := store.Open(ctx, "postgres://nobody:pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", nil); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Open(unreachable postgres) = %v; want ErrUnavailable", err)
	}
}

func TestCanTransition(t *testing.T) {
	tests := []struct {
		from, to store.JobStatus
		want     bool
	}{
		{store.JobPending, store.JobCreating, true},
		{store.JobPending, store.JobCancelled, true},
		{store.JobPending, store.JobRunning, false},
		{store.JobPending, store.JobFailed, false},
		{store.JobCreating, store.JobRunning, true},
		{store.JobCreating, store.JobFailed, true},
		{store.JobRunning, store.JobCompleting, true},
		{store.JobRunning, store.JobCompleted, false},
		{store.JobCompleting, store.JobCompleted, true},
		{store.JobCompleting, store.JobCancelled, true},
		{store.JobCompleted, store.JobCancelled, false},
		{store.JobFailed, store.JobRunning, false},
		{store.JobCancelled, store.JobPending, false},
	}
	for _, tt := range tests {
		if got := store.CanTransition(tt.from, tt.to); got != tt.want {
			t.Errorf("CanTransition(%s, %s) = %v; want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

// wantClass fails the test unless err is of class.
func wantClass(t *testing.T, what string, err, class error) {
	t.Helper()
	if !errors.Is(err, class) {
		t.Errorf("%s = %v; want %v", what, err, class)
	}
}

// must fails the test now if err is not nil.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s = %v", what, err)
	}
}

func errorsIs(err, class error) bool { return errors.Is(err, class) }
