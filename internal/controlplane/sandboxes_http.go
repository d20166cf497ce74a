package controlplane

import (
	"net/http"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxes"
)

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.SandboxRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	p := principal(r)
	sb, err := s.sbx.Create(r.Context(), p.TenantID, req, sandboxes.CreateOptions{})
	if err != nil {
		return err
	}
	s.log.Info("sandbox created", "tenant", p.TenantID, "id", sb.ID, "runtime", sb.Runtime, "template", sb.Template)
	httpjson.Write(w, http.StatusCreated, sb)
	return nil
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) error {
	list, err := s.sbx.List(r.Context(), principal(r).TenantID)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) error {
	sb, err := s.sbx.Get(r.Context(), principal(r).TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, sb)
	return nil
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	if err := s.sbx.Delete(r.Context(), p.TenantID, r.PathValue("id")); err != nil {
		return err
	}
	s.log.Info("sandbox deleted", "tenant", p.TenantID, "id", r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) extendSandbox(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.TimeoutRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	sb, err := s.sbx.Extend(r.Context(), principal(r).TenantID, r.PathValue("id"), req.TimeoutS)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, sb)
	return nil
}

// proxySandbox hands every other /v1/sandboxes/{id}/... request to the
// sandboxd proxy.
func (s *Server) proxySandbox(w http.ResponseWriter, r *http.Request) error {
	s.proxy.ServeHTTP(w, r)
	return nil
}
