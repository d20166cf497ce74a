package controlplane

import (
	"net/http"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/store"
)

// Tenants: an admin lists them and changes their limits; any caller may
// read its own tenant (another tenant's is 404 to it, as for jobs).

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	if !principal(r).Admin {
		return errdefs.Forbiddenf("only an admin token can list tenants")
	}
	ts, err := s.store.ListTenants(r.Context())
	if err != nil {
		return err
	}
	list := cpapi.TenantList{Tenants: make([]cpapi.Tenant, 0, len(ts))}
	for _, t := range ts {
		list.Tenants = append(list.Tenants, tenantJSON(t))
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	p, id := principal(r), r.PathValue("id")
	if !p.Admin && id != p.TenantID {
		return errdefs.NotFoundf("tenant %q not found", id)
	}
	t, err := s.store.GetTenant(r.Context(), id)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, tenantJSON(t))
	return nil
}

func (s *Server) setTenantLimits(w http.ResponseWriter, r *http.Request) error {
	p, id := principal(r), r.PathValue("id")
	if !p.Admin {
		return errdefs.Forbiddenf("only an admin token can change a tenant's limits")
	}
	var req cpapi.TenantLimits
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	if req.MaxConcurrentJobs == nil && req.MaxSandboxes == nil {
		return errdefs.Invalidf("name a limit to change: max_concurrent_jobs, max_sandboxes")
	}
	t, err := s.store.SetTenantLimits(r.Context(), id, req.MaxConcurrentJobs, req.MaxSandboxes)
	if err != nil {
		return err
	}
	s.log.Info("tenant limits set", "tenant", id, "max_concurrent_jobs", t.MaxConcurrentJobs, "max_sandboxes", t.MaxSandboxes, "by", p.TokenID)
	httpjson.Write(w, http.StatusOK, tenantJSON(t))
	return nil
}

func tenantJSON(t *store.Tenant) cpapi.Tenant {
	return cpapi.Tenant{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, MaxConcurrentJobs: t.MaxConcurrentJobs, MaxSandboxes: t.MaxSandboxes}
}
