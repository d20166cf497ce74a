package store_test

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// stepClock returns a time that moves by step on every reading; step 0
// freezes it, to make creation times collide.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *stepClock) setStep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = d
}

// pageAll lists every job of the tenant matching f, page by page, calling
// between(page) after each page.
func pageAll(t *testing.T, s *store.Store, tenant string, f store.JobFilter, between func(int)) []*store.Job {
	t.Helper()
	var all []*store.Job
	for page := 0; ; page++ {
		jobs, next, err := s.ListJobs(context.Background(), tenant, f)
		must(t, "ListJobs", err)
		if len(jobs) > f.Limit && f.Limit > 0 {
			t.Fatalf("page of %d jobs; limit %d", len(jobs), f.Limit)
		}
		all = append(all, jobs...)
		if next == "" {
			return all
		}
		if page > 100 {
			t.Fatal("paging does not end")
		}
		f.Cursor = next
		if between != nil {
			between(page)
		}
	}
}

func testListJobsPaging(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	clock := &stepClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.SetClock(clock.now)
	tn := storetest.Tenant(t, s, "a", 0)
	other := storetest.Tenant(t, s, "b", 0)

	want := map[string]bool{}
	for i := range 25 {
		if i == 10 {
			clock.setStep(time.Millisecond) // the first 10 share one creation time
		}
		want[storetest.Job(t, s, tn.ID).ID] = true
		storetest.Job(t, s, other.ID)
	}

	// Jobs created while paging land before the cursor: never on a later page.
	var added []string
	all := pageAll(t, s, tn.ID, store.JobFilter{Limit: 7}, func(int) {
		added = append(added, storetest.Job(t, s, tn.ID).ID)
	})
	seen := map[string]bool{}
	for i, j := range all {
		if seen[j.ID] {
			t.Errorf("job %s listed twice", j.ID)
		}
		seen[j.ID] = true
		if !want[j.ID] {
			t.Errorf("job %s listed; not one of the tenant's first 25", j.ID)
		}
		if i > 0 {
			p := all[i-1]
			if j.CreatedAt.After(p.CreatedAt) || j.CreatedAt.Equal(p.CreatedAt) && j.ID >= p.ID {
				t.Errorf("job %d (%v %s) is not older than job %d (%v %s)", i, j.CreatedAt, j.ID, i-1, p.CreatedAt, p.ID)
			}
		}
	}
	if len(seen) != 25 || len(added) != 3 {
		t.Errorf("paged %d jobs with %d added meanwhile; want 25 and 3", len(seen), len(added))
	}
	if all := pageAll(t, s, tn.ID, store.JobFilter{Limit: 500}, nil); len(all) != 28 || all[0].ID != added[2] {
		t.Errorf("a new listing has %d jobs, first %s; want 28, the last added %s", len(all), all[0].ID, added[2])
	}

	// Status filter.
	n := 0
	for id := range want {
		if n == 4 {
			break
		}
		_, err := s.TransitionJob(ctx, id, store.JobPending, store.JobCancelled, "", nil)
		must(t, "TransitionJob", err)
		n++
	}
	got := pageAll(t, s, tn.ID, store.JobFilter{Status: []store.JobStatus{store.JobCancelled}, Limit: 3}, nil)
	if len(got) != 4 {
		t.Errorf("cancelled jobs: %d; want 4", len(got))
	}
	for _, j := range got {
		if j.Status != store.JobCancelled {
			t.Errorf("status filter returned a %s job", j.Status)
		}
	}
	got = pageAll(t, s, tn.ID, store.JobFilter{Status: []store.JobStatus{store.JobPending, store.JobCancelled}}, nil)
	if len(got) != 28 {
		t.Errorf("pending or cancelled: %d; want 28", len(got))
	}
}

func testListJobsBadInput(t *testing.T, b storetest.Backend) {
	ctx := context.Background()
	s, _ := storetest.Fresh(t, b)
	tn := storetest.Tenant(t, s, "a", 0)
	storetest.Job(t, s, tn.ID)
	storetest.Job(t, s, tn.ID)
	_, next, err := s.ListJobs(ctx, tn.ID, store.JobFilter{Limit: 1})
	must(t, "ListJobs", err)
	if next == "" {
		t.Fatal("ListJobs(limit 1 of 2) gave no next cursor")
	}
	bad := []store.JobFilter{
		{Cursor: "not a cursor!"},
		{Cursor: base64.RawURLEncoding.EncodeToString([]byte("j1.12.bad id"))},
		{Cursor: base64.RawURLEncoding.EncodeToString([]byte("j2.12.job_x"))},
		{Cursor: next[:len(next)-3] + "***"},
		{Status: []store.JobStatus{"sleeping"}},
		{Limit: -1},
	}
	for _, f := range bad {
		_, _, err := s.ListJobs(ctx, tn.ID, f)
		wantClass(t, "ListJobs("+f.Cursor+")", err, errdefs.ErrInvalid)
	}
	// A cursor only positions; it never widens the tenant.
	other := storetest.Tenant(t, s, "b", 0)
	if jobs, _, err := s.ListJobs(ctx, other.ID, store.JobFilter{Cursor: next}); err != nil || len(jobs) != 0 {
		t.Errorf("ListJobs(other tenant, a's cursor) = %d jobs, %v; want none", len(jobs), err)
	}
}
