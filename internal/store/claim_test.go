package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// fakeClock is a settable clock for leases.
type fakeClock struct{ off atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.off.Add(int64(d)) }

// claimAll runs workers goroutines per store, each claiming until there is
// nothing left, and returns how many times each job was claimed.
func claimAll(t *testing.T, stores []*store.Store, workers int, lease time.Duration) map[string]int {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	claims := map[string]int{}
	var wg sync.WaitGroup
	for si, s := range stores {
		for w := range workers {
			wg.Go(func() {
				worker := "w" + string(rune('a'+si)) + string(rune('a'+w))
				for {
					j, err := s.ClaimJob(ctx, worker, lease)
					if errorsIs(err, errdefs.ErrNotFound) {
						return
					}
					if err != nil {
						t.Errorf("ClaimJob(%s) = %v", worker, err)
						return
					}
					if j.ClaimedBy != worker || j.Status != store.JobPending || j.ClaimExpiresAt.IsZero() {
						t.Errorf("ClaimJob(%s) = %+v; want pending, claimed by it", worker, j)
					}
					mu.Lock()
					claims[j.ID]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return claims
}

// testClaimExclusive: 200 jobs, 20 claimers split over two Stores on one
// database (two control-plane "servers"): every job is claimed exactly once.
func testClaimExclusive(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s1, url := storetest.Fresh(t, b)
	s2 := storetest.Open(t, url)
	var jobs []string
	for i := range 4 {
		tn := storetest.Tenant(t, s1, "t"+string(rune('0'+i)), 0)
		for range 50 {
			jobs = append(jobs, storetest.Job(t, s1, tn.ID).ID)
		}
	}
	claims := claimAll(t, []*store.Store{s1, s2}, 10, time.Minute)
	if len(claims) != len(jobs) {
		t.Errorf("%d jobs claimed; want %d", len(claims), len(jobs))
	}
	for _, id := range jobs {
		if n := claims[id]; n != 1 {
			t.Errorf("job %s claimed %d times; want 1", id, n)
		}
	}
	_, err := s1.ClaimJob(ctx, "late", time.Minute)
	wantClass(t, "ClaimJob(all claimed)", err, errdefs.ErrNotFound)
}

func testClaimLease(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	url := b.NewURL(t)
	s := storetest.Open(t, url)
	var clock fakeClock
	s.SetClock(clock.now)
	tn := storetest.Tenant(t, s, "a", 0)
	first := storetest.Job(t, s, tn.ID)
	second := storetest.Job(t, s, tn.ID)

	j, err := s.ClaimJob(ctx, "w1", time.Minute)
	must(t, "ClaimJob(w1)", err)
	if j.ID != first.ID || j.Attempts != 1 {
		t.Fatalf("ClaimJob = %s (attempts %d); want the oldest, %s, attempt 1", j.ID, j.Attempts, first.ID)
	}
	j, err = s.ClaimJob(ctx, "w2", time.Minute)
	must(t, "ClaimJob(w2)", err)
	if j.ID != second.ID {
		t.Fatalf("ClaimJob(w2) = %s; want %s", j.ID, second.ID)
	}
	_, err = s.ClaimJob(ctx, "w3", time.Minute)
	wantClass(t, "ClaimJob(none free)", err, errdefs.ErrNotFound)
	wantClass(t, "RenewLease(not holder)", s.RenewLease(ctx, first.ID, "w2", time.Minute), errdefs.ErrConflict)
	must(t, "RenewLease(w1)", s.RenewLease(ctx, first.ID, "w1", time.Minute))

	// w1 dies: its lease runs out and the job goes to w3.
	clock.advance(90 * time.Second)
	must(t, "RenewLease(w2)", s.RenewLease(ctx, second.ID, "w2", time.Hour)) // expired, but nobody took it
	j, err = s.ClaimJob(ctx, "w3", time.Minute)
	must(t, "ClaimJob(w3) after expiry", err)
	if j.ID != first.ID || j.Attempts != 2 || j.ClaimedBy != "w3" {
		t.Fatalf("ClaimJob(w3) = %s attempts %d by %s; want %s, 2, w3", j.ID, j.Attempts, j.ClaimedBy, first.ID)
	}
	wantClass(t, "RenewLease(w1, lost)", s.RenewLease(ctx, first.ID, "w1", time.Minute), errdefs.ErrConflict)
	wantClass(t, "ReleaseClaim(w1, lost)", s.ReleaseClaim(ctx, first.ID, "w1"), errdefs.ErrConflict)

	// Released: claimable at once.
	must(t, "ReleaseClaim(w3)", s.ReleaseClaim(ctx, first.ID, "w3"))
	j, err = s.ClaimJob(ctx, "w4", time.Minute)
	must(t, "ClaimJob(w4) after release", err)
	if j.ID != first.ID || j.Attempts != 3 {
		t.Fatalf("ClaimJob(w4) = %s attempts %d; want %s, 3", j.ID, j.Attempts, first.ID)
	}

	// The claim survives transitions and ends with the job.
	j, err = s.TransitionJob(ctx, first.ID, store.JobPending, store.JobCreating, "", nil)
	must(t, "TransitionJob", err)
	if j.ClaimedBy != "w4" {
		t.Errorf("after pending→creating, ClaimedBy = %q; want w4", j.ClaimedBy)
	}
	must(t, "RenewLease(w4, creating)", s.RenewLease(ctx, first.ID, "w4", time.Minute))
	j, err = s.TransitionJob(ctx, first.ID, store.JobCreating, store.JobCancelled, "user", nil)
	must(t, "TransitionJob(cancel)", err)
	if j.ClaimedBy != "" || !j.ClaimExpiresAt.IsZero() {
		t.Errorf("cancelled job keeps claim %q until %v; want none", j.ClaimedBy, j.ClaimExpiresAt)
	}
	wantClass(t, "RenewLease(final)", s.RenewLease(ctx, first.ID, "w4", time.Minute), errdefs.ErrConflict)

	_, err = s.ClaimJob(ctx, "", time.Minute)
	wantClass(t, "ClaimJob(no worker)", err, errdefs.ErrInvalid)
	_, err = s.ClaimJob(ctx, "w", 0)
	wantClass(t, "ClaimJob(no lease)", err, errdefs.ErrInvalid)
	wantClass(t, "RenewLease(missing)", s.RenewLease(ctx, "job_missing", "w", time.Minute), errdefs.ErrNotFound)
	wantClass(t, "RenewLease(zero)", s.RenewLease(ctx, second.ID, "w2", 0), errdefs.ErrInvalid)
	wantClass(t, "ReleaseClaim(missing)", s.ReleaseClaim(ctx, "job_missing", "w"), errdefs.ErrNotFound)
}

// testClaimTenantLimit: a tenant with max_concurrent_jobs 2 never has more
// than 2 jobs claimed or active, even with concurrent claimers on two
// Stores; other tenants are not held up behind it.
func testClaimTenantLimit(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s1, url := storetest.Fresh(t, b)
	s2 := storetest.Open(t, url)
	var clock fakeClock
	s1.SetClock(clock.now)
	limited := storetest.Tenant(t, s1, "limited", 2)
	free := storetest.Tenant(t, s1, "free", 0)
	var ljobs []string
	for range 5 {
		ljobs = append(ljobs, storetest.Job(t, s1, limited.ID).ID)
	}
	for range 3 {
		storetest.Job(t, s1, free.ID)
	}

	claims := claimAll(t, []*store.Store{s1, s2}, 5, time.Minute)
	var nl, nf int
	var claimed []string
	for id, n := range claims {
		if n != 1 {
			t.Errorf("job %s claimed %d times", id, n)
		}
		if contains(ljobs, id) {
			nl++
			claimed = append(claimed, id)
		} else {
			nf++
		}
	}
	if nl != 2 || nf != 3 {
		t.Fatalf("claimed %d of the limited tenant's jobs and %d of the free one's; want 2 and 3", nl, nf)
	}

	// One starts running; the other claim still reserves the second slot.
	for _, to := range []store.JobStatus{store.JobCreating, store.JobRunning} {
		from := store.JobPending
		if to == store.JobRunning {
			from = store.JobCreating
		}
		_, err := s1.TransitionJob(ctx, claimed[0], from, to, "", nil)
		must(t, "TransitionJob", err)
	}
	if n, err := s1.CountActiveJobs(ctx, limited.ID); err != nil || n != 1 {
		t.Errorf("CountActiveJobs = %d, %v; want 1", n, err)
	}
	_, err := s1.ClaimJob(ctx, "x", time.Minute)
	wantClass(t, "ClaimJob(tenant at limit)", err, errdefs.ErrNotFound)

	// Cancelling the reserved one frees its slot.
	_, err = s1.TransitionJob(ctx, claimed[1], store.JobPending, store.JobCancelled, "user", nil)
	must(t, "TransitionJob(cancel)", err)
	j, err := s1.ClaimJob(ctx, "x", time.Minute)
	must(t, "ClaimJob(slot freed)", err)
	if j.TenantID != limited.ID {
		t.Errorf("ClaimJob = tenant %s; want %s", j.TenantID, limited.ID)
	}
	_, err = s1.ClaimJob(ctx, "y", time.Minute)
	wantClass(t, "ClaimJob(at limit again)", err, errdefs.ErrNotFound)

	// A lapsed claim reserves nothing: its job can be claimed again.
	clock.advance(2 * time.Minute)
	j2, err := s1.ClaimJob(ctx, "y", time.Minute)
	must(t, "ClaimJob(after lease expiry)", err)
	if j2.ID != j.ID || j2.Attempts != 2 {
		t.Errorf("ClaimJob after expiry = %s attempt %d; want %s attempt 2", j2.ID, j2.Attempts, j.ID)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// testAdoptJob: a working job whose lease ran out is adopted by exactly
// one of several racing workers; a live lease or a final job is refused.
func testAdoptJob(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s1, url := storetest.Fresh(t, b)
	s2 := storetest.Open(t, url)
	var clock fakeClock
	s1.SetClock(clock.now)
	s2.SetClock(clock.now)
	tn := storetest.Tenant(t, s1, "a", 0)
	job := storetest.Job(t, s1, tn.ID)
	j, err := s1.ClaimJob(ctx, "dead", time.Minute)
	must(t, "ClaimJob", err)
	_, err = s1.TransitionJob(ctx, j.ID, store.JobPending, store.JobCreating, "", nil)
	must(t, "to creating", err)
	_, err = s1.TransitionJob(ctx, j.ID, store.JobCreating, store.JobRunning, "", nil)
	must(t, "to running", err)

	if _, err := s2.AdoptJob(ctx, job.ID, "thief", time.Minute); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("AdoptJob under a live lease = %v; want conflict", err)
	}
	if _, err := s2.AdoptJob(ctx, "job_nope", "w", time.Minute); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("AdoptJob(unknown) = %v; want not found", err)
	}
	clock.advance(2 * time.Minute) // the dead worker's lease runs out
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		s := []*store.Store{s1, s2}[i%2]
		wg.Go(func() {
			if aj, err := s.AdoptJob(ctx, job.ID, fmt.Sprint("w", i), time.Minute); err == nil {
				if aj.ClaimedBy != fmt.Sprint("w", i) || aj.Status != store.JobRunning {
					t.Errorf("adopted job = claimed by %q, %s", aj.ClaimedBy, aj.Status)
				}
				wins.Add(1)
			} else if !errors.Is(err, errdefs.ErrConflict) {
				t.Errorf("AdoptJob: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d workers adopted the job; want exactly 1", wins.Load())
	}
	_, err = s1.TransitionJob(ctx, job.ID, store.JobRunning, store.JobFailed, "x", nil)
	must(t, "to failed", err)
	clock.advance(2 * time.Minute)
	if _, err := s1.AdoptJob(ctx, job.ID, "late", time.Minute); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("AdoptJob of a final job = %v; want conflict", err)
	}
}
