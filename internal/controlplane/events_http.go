package controlplane

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sse"
	"github.com/corral-sh/corral/internal/store"
)

// maxEventPage caps a JSON page of events.
const maxEventPage = 1000

// jobEvents serves a job's event log: as SSE by default (replay after
// Last-Event-ID or ?after=, then live, ending after the final state), or
// as one JSON page with Accept: application/json.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	id := r.PathValue("id")
	job, err := s.store.GetJob(r.Context(), p.TenantID, id)
	if err != nil {
		return err
	}
	after, err := resumePoint(r)
	if err != nil {
		return err
	}
	if wantsJSON(r) {
		limit, err := queryLimit(r, 100, maxEventPage)
		if err != nil {
			return err
		}
		evs, err := s.store.EventsAfter(r.Context(), id, after, limit)
		if err != nil {
			return err
		}
		page := cpapi.EventPage{Events: make([]cpapi.Event, 0, len(evs)), NextAfter: after}
		for _, e := range evs {
			page.Events = append(page.Events, apiEvent(e))
			page.NextAfter = e.Seq
		}
		httpjson.Write(w, http.StatusOK, page)
		return nil
	}
	if job.Status.Terminal() && after >= job.NextSeq-1 {
		// A finished job resumed at or past its last event: nothing will
		// follow, so the stream ends at once.
		sse.Start(w)
		return nil
	}
	sub, err := s.broker.Subscribe(r.Context(), id, after)
	if err != nil {
		return err
	}
	defer sub.Close()
	stream := sse.Start(w)
	for {
		e, err := nextOrHeartbeat(r.Context(), stream, sub.Next)
		if err != nil {
			return nil // client gone, server stopping, or heartbeat failed
		}
		if err := stream.Event(strconv.FormatInt(e.Seq, 10), e.Type, apiEvent(e)); err != nil {
			return nil
		}
		if finalState(e) {
			return nil
		}
	}
}

// tenantEvents streams the tenant's job state changes.
func (s *Server) tenantEvents(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	sub, err := s.broker.SubscribeTenant(r.Context(), p.TenantID)
	if err != nil {
		return err
	}
	defer sub.Close()
	stream := sse.Start(w)
	for {
		e, err := nextOrHeartbeat(r.Context(), stream, sub.Next)
		if err != nil {
			return nil
		}
		var st cpapi.StateData
		_ = jsonUnmarshal(e.Data, &st)
		te := cpapi.TenantEvent{JobID: e.JobID, Seq: e.Seq, Time: e.Time, From: st.From, To: st.To, Reason: st.Reason}
		if err := stream.Event("", cpapi.EventJobState, te); err != nil {
			return nil
		}
	}
}

// nextOrHeartbeat waits for the next event, sending a heartbeat comment
// every sse.HeartbeatInterval meanwhile.
func nextOrHeartbeat(ctx context.Context, stream *sse.Writer, next func(context.Context) (store.Event, error)) (store.Event, error) {
	for {
		nctx, cancel := context.WithTimeout(ctx, sse.HeartbeatInterval)
		e, err := next(nctx)
		cancel()
		if err == nil {
			return e, nil
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return store.Event{}, err
		}
		if err := stream.Comment("ping"); err != nil {
			return store.Event{}, err
		}
	}
}

func finalState(e store.Event) bool {
	if e.Type != cpapi.EventJobState {
		return false
	}
	var st cpapi.StateData
	if jsonUnmarshal(e.Data, &st) != nil {
		return false
	}
	return st.To == cpapi.JobCompleted || st.To == cpapi.JobFailed || st.To == cpapi.JobCancelled
}

func apiEvent(e store.Event) cpapi.Event {
	return cpapi.Event{Seq: e.Seq, JobID: e.JobID, Time: e.Time, Type: e.Type, Data: e.Data}
}

// resumePoint reads Last-Event-ID, else ?after=; 0 replays everything.
func resumePoint(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errdefs.Invalidf("Last-Event-ID / after must be an event sequence number")
	}
	return n, nil
}

func wantsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, mediaSSE)
}

func queryLimit(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, errdefs.Invalidf("limit must be between 1 and %d", max)
	}
	return n, nil
}
