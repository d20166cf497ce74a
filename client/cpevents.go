package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
)

// JobEvents streams a job's event log from the event after seq after (0:
// from the start): the events already logged, then live ones. The stream
// ends (Next returns io.EOF) after the event that moves the job to its
// final state; a finished job's stream replays its log and ends.
//
// A dropped connection is reopened with Last-Event-ID, so the reader sees
// every event once and in order across network failures; Next gives up
// after repeated failures with no event coming through, or when ctx ends.
// ctx bounds the whole stream.
func (cp *ControlPlane) JobEvents(ctx context.Context, id string, after int64) (*EventStream[cpapi.Event], error) {
	route := jobPath(id, "/events")
	var q url.Values
	if after > 0 {
		q = url.Values{"after": {strconv.FormatInt(after, 10)}}
	}
	resp, err := cp.c.openSSE(ctx, route, q, "")
	if err != nil {
		return nil, err
	}
	s := newEventStream(resp.Body, func(ev sseEvent) (cpapi.Event, bool, error) {
		var e cpapi.Event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return e, false, fmt.Errorf("client: job %s: event %s %q: %w", id, ev.ID, ev.Event, err)
		}
		return e, true, nil
	})
	s.last = FinalEvent
	s.resume = func(attempt int, lastID string) (io.ReadCloser, error) {
		if err := sleepCtx(ctx, resumeDelay(attempt)); err != nil {
			return nil, err
		}
		resp, err := cp.c.openSSE(ctx, route, q, lastID)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	return s, nil
}

// FinalEvent reports whether e moves its job to a final state: completed,
// failed or cancelled.
func FinalEvent(e cpapi.Event) bool {
	if e.Type != cpapi.EventJobState {
		return false
	}
	var st cpapi.StateData
	if json.Unmarshal(e.Data, &st) != nil {
		return false
	}
	return FinalStatus(st.To)
}

// FinalStatus reports whether a job in status st is done for good.
func FinalStatus(st string) bool {
	return st == cpapi.JobCompleted || st == cpapi.JobFailed || st == cpapi.JobCancelled
}

// resumeDelay is the wait before reopening a stream the attempt-th time
// in a row: none at first (a blip), then doubling from 200 ms to 5 s.
func resumeDelay(attempt int) time.Duration {
	if attempt <= 1 {
		return 0
	}
	d := 200 * time.Millisecond << min(attempt-2, 5)
	return min(d, 5*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// EventsPage returns up to limit (0: the server's default, 100) events of
// a job's log after seq after, without waiting for new ones. The page's
// NextAfter is the after of the following page.
func (cp *ControlPlane) EventsPage(ctx context.Context, id string, after int64, limit int) (*cpapi.EventPage, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page cpapi.EventPage
	if err := cp.c.call(ctx, http.MethodGet, jobPath(id, "/events"), q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// Events streams the state changes of all the tenant's jobs from now on
// (GET /v1/events), for a dashboard. The stream does not resume: after an
// error, open a new one and reread the jobs that matter.
func (cp *ControlPlane) Events(ctx context.Context) (*EventStream[cpapi.TenantEvent], error) {
	resp, err := cp.c.openSSE(ctx, "/v1/events", nil, "")
	if err != nil {
		return nil, err
	}
	return newEventStream(resp.Body, func(ev sseEvent) (cpapi.TenantEvent, bool, error) {
		var e cpapi.TenantEvent
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return e, false, fmt.Errorf("client: tenant event %q: %w", ev.Event, err)
		}
		return e, true, nil
	}), nil
}
