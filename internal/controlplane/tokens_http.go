package controlplane

import (
	"encoding/json"
	"net/http"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/auth"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/version"
)

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req cpapi.TokenRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	tok, err := s.auth.Create(r.Context(), principal(r), req)
	if err != nil {
		return err
	}
	s.log.Info("token created", "tenant", tok.Tenant, "id", tok.ID, "admin", tok.Admin, "by", principal(r).TokenID)
	httpjson.Write(w, http.StatusCreated, tok)
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	list, err := s.auth.List(r.Context(), principal(r))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	if err := s.auth.Revoke(r.Context(), principal(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, health{Status: "ok", Version: version.String()})
	return nil
}

// readyz answers 200 once the store answers a query.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.store.ListTenants(r.Context()); err != nil {
		return errdefs.Wrap(errdefs.ErrUnavailable, err, "the store does not answer")
	}
	httpjson.Write(w, http.StatusOK, health{Status: "ready", Version: version.String()})
	return nil
}

// principal is the authenticated caller; routes behind auth.Middleware
// always have one.
func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
