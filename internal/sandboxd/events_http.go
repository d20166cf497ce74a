package sandboxd

import (
	"net/http"
	"strconv"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/sse"
)

// processEvents streams process lifecycle events. Each event's id is its
// sequence number; a client resumes with Last-Event-ID (or ?after=) and
// gets every event after it that is still retained (the last 4096).
func (s *Server) processEvents(w http.ResponseWriter, r *http.Request) error {
	var after uint64
	resume := r.Header.Get("Last-Event-ID")
	if resume == "" {
		resume = r.URL.Query().Get("after")
	}
	if resume != "" {
		n, err := strconv.ParseUint(resume, 10, 64)
		if err != nil {
			return errdefs.Invalidf("Last-Event-ID / after must be an event sequence number")
		}
		after = n
	} else {
		// A new subscriber starts from now, not from history.
		after = s.procs.LastEventSeq()
	}
	stream := sse.Start(w)
	heartbeat := time.NewTicker(sse.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		evs, _, wait := s.procs.Events(after, 256)
		for _, ev := range evs {
			if err := stream.Event(strconv.FormatUint(ev.Seq, 10), ev.Type, ev.Process); err != nil {
				return nil
			}
			after = ev.Seq
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-wait:
		case <-heartbeat.C:
			if stream.Comment("ping") != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		case <-s.stopping:
			return nil
		}
	}
}
