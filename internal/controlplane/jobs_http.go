package controlplane

import (
	"io"
	"net/http"
	"os"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/httpjson"
)

// maxJobBody caps a job request: its env and task may be long, not huge.
const maxJobBody = 1 << 20

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.JobRequest
	if err := httpjson.Decode(w, r, &req, maxJobBody); err != nil {
		return err
	}
	p := principal(r)
	j, err := s.jobs.Submit(r.Context(), p.TenantID, req)
	if err != nil {
		return err
	}
	s.log.Info("job submitted", "tenant", p.TenantID, "id", j.ID, "agent", j.Agent)
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	httpjson.Write(w, http.StatusCreated, j)
	return nil
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, 50, 500)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	list, err := s.jobs.List(r.Context(), principal(r).TenantID, q.Get("status"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	j, err := s.jobs.Get(r.Context(), principal(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, j)
	return nil
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	j, err := s.jobs.Cancel(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	s.log.Info("job cancelled", "tenant", p.TenantID, "id", j.ID)
	httpjson.Write(w, http.StatusAccepted, j)
	return nil
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.MessageRequest
	if err := httpjson.Decode(w, r, &req, maxJobBody); err != nil {
		return err
	}
	if err := s.jobs.SendMessage(r.Context(), principal(r).TenantID, r.PathValue("id"), req.Text); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// jobArtifacts streams the artifact zip (Range honoured).
func (s *Server) jobArtifacts(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	path, err := s.jobs.Artifacts(r.Context(), principal(r).TenantID, id)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", mediaZip)
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`.zip"`)
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}

func (s *Server) jobDiff(w http.ResponseWriter, r *http.Request) error {
	rc, err := s.jobs.Diff(r.Context(), principal(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", mediaPatch+"; charset=utf-8")
	_, _ = io.Copy(w, rc)
	return nil
}

// schedule is the seed-001 form of POST /v1/jobs: a task and defaults.
func (s *Server) schedule(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.ScheduleRequest
	if err := httpjson.Decode(w, r, &req, maxJobBody); err != nil {
		return err
	}
	j, err := s.jobs.Submit(r.Context(), principal(r).TenantID, cpapi.JobRequest{Task: req.Task})
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, cpapi.ScheduleResponse{JobID: j.ID})
	return nil
}

// status is the seed-001 view of a job: pending, running, complete or
// error, and where its artifacts are once there are some.
func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	j, err := s.jobs.Get(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	res := cpapi.StatusResponse{Status: coarseStatus(j.Status)}
	if _, err := s.jobs.Artifacts(r.Context(), p.TenantID, j.ID); err == nil {
		res.DownloadURL = "/v1/jobs/" + j.ID + "/artifacts"
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

func coarseStatus(st string) string {
	switch st {
	case cpapi.JobPending, cpapi.JobCreating:
		return "pending"
	case cpapi.JobRunning, cpapi.JobCompleting:
		return "running"
	case cpapi.JobCompleted:
		return "complete"
	default:
		return "error"
	}
}
