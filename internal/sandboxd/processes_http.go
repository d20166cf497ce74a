package sandboxd

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
	"github.com/corral-sh/corral/internal/sandboxd/procs"
)

// Limits of the process routes.
const (
	maxInputBody     = 8 << 20 // a base64 input body
	defaultReadLimit = 1 << 20 // bytes returned by one output read
	maxReadLimit     = 16 << 20
	maxWait          = 5 * time.Minute
)

func (s *Server) spawnProcess(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.SpawnRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	p, err := s.procs.Spawn(req)
	if err != nil {
		return err
	}
	s.log.Info("process spawned", "id", p.ID(), "command", req.Command, "pty", req.PTY != nil, "tag", req.Tag)
	httpjson.Write(w, http.StatusCreated, p.Snapshot())
	return nil
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := procs.Filter{Status: q.Get("status"), Tag: q.Get("tag")}
	if f.Status != "" && f.Status != sandboxapi.StatusRunning && f.Status != sandboxapi.StatusExited {
		return errdefs.Invalidf("status must be %q or %q", sandboxapi.StatusRunning, sandboxapi.StatusExited)
	}
	if v := q.Get("pty"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errdefs.Invalidf("pty must be true or false")
		}
		f.PTY = &b
	}
	httpjson.Write(w, http.StatusOK, sandboxapi.ProcessList{Processes: s.procs.List(f)})
	return nil
}

func (s *Server) getProcess(w http.ResponseWriter, r *http.Request) error {
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, p.Snapshot())
	return nil
}

func (s *Server) deleteProcess(w http.ResponseWriter, r *http.Request) error {
	if err := s.procs.Delete(r.Context(), r.PathValue("ref")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) signalProcess(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.SignalRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	sig, err := procs.ParseSignal(req.Signal)
	if err != nil {
		return err
	}
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) resizeProcess(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.PTYSize
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := p.Resize(req.Rows, req.Cols); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) inputProcess(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.InputRequest
	if err := httpjson.Decode(w, r, &req, maxInputBody); err != nil {
		return err
	}
	var data []byte
	switch {
	case req.Data != nil && req.DataBase64 != nil:
		return errdefs.Invalidf("give data or data_base64, not both")
	case req.Data != nil:
		data = []byte(*req.Data)
	case req.DataBase64 != nil:
		var err error
		if data, err = base64.StdEncoding.DecodeString(*req.DataBase64); err != nil {
			return errdefs.Invalidf("data_base64 is not valid base64")
		}
	default:
		return errdefs.Invalidf("data or data_base64 is required")
	}
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := p.WriteInput(data); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) closeStdin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := p.CloseStdin(); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// processOutput returns retained output from ?offset= (default: the oldest
// retained byte), up to ?limit= bytes, optionally only one ?stream=. With
// ?wait_ms= it long-polls until there is output, the process ends, or the
// wait is over. Headers give the offset of the first byte, the offset to
// ask for next, and whether bytes before the window were lost.
func (s *Server) processOutput(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	offset, err := queryInt(q.Get("offset"), -1, "offset")
	if err != nil {
		return err
	}
	waitMS, err := queryInt(q.Get("wait_ms"), 0, "wait_ms")
	if err != nil {
		return err
	}
	limit, err := queryInt(q.Get("limit"), defaultReadLimit, "limit")
	if err != nil {
		return err
	}
	if limit < 1 || limit > maxReadLimit {
		return errdefs.Invalidf("limit must be between 1 and %d", maxReadLimit)
	}
	var only byte
	switch q.Get("stream") {
	case "":
	case "stdout":
		only = outlog.Stdout
	case "stderr":
		only = outlog.Stderr
	default:
		return errdefs.Invalidf("stream must be stdout or stderr")
	}
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	log := p.Log()
	if offset < 0 {
		offset, _ = log.Bounds()
	}
	wait := min(time.Duration(waitMS)*time.Millisecond, maxWait)
	timer := time.NewTimer(wait)
	defer timer.Stop()

	buf := make([]byte, 0, min(limit, int64(log.Size())))
	first, next, truncated := int64(-1), offset, false
loop:
	for int64(len(buf)) < limit {
		c := log.Read(next, buf[len(buf):min(int64(cap(buf)), limit)])
		truncated = truncated || (c.Truncated && first < 0)
		if first < 0 {
			first = c.Offset
		}
		if c.N > 0 {
			if only == 0 || c.Stream == only {
				buf = buf[:len(buf)+c.N]
			}
			next = c.Offset + int64(c.N)
			if len(buf) == cap(buf) {
				break
			}
			continue
		}
		next = c.Offset
		if c.EOF || len(buf) > 0 || wait <= 0 {
			break
		}
		select { // nothing yet: long-poll
		case <-c.Wait:
		case <-timer.C:
			break loop
		case <-r.Context().Done():
			break loop
		case <-s.stopping:
			break loop
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set(sandboxapi.HeaderOffset, strconv.FormatInt(first, 10))
	h.Set(sandboxapi.HeaderNextOffset, strconv.FormatInt(next, 10))
	h.Set(sandboxapi.HeaderTruncated, strconv.FormatBool(truncated))
	h.Set(sandboxapi.HeaderProcessStatus, p.Snapshot().Status)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
	return nil
}

func queryInt(v string, def int64, name string) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errdefs.Invalidf("%s must be a non-negative integer", name)
	}
	return n, nil
}
