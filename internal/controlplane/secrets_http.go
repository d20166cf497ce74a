package controlplane

import (
	"net/http"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/secrets"
)

// maxSecretBody caps PUT /v1/secrets/{name}: the largest value with every
// byte JSON-escaped (\u00XX, 6 bytes), and room for the rest. Larger
// bodies are 413; values over the limit that fit are 400.
const maxSecretBody = 6*secrets.MaxValueBytes + 1024

// The handlers below never log or echo a value: only names, the tenant and
// the token that acted.

func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := secrets.CheckName(name); err != nil { // before reading the body
		return err
	}
	var req cpapi.SecretRequest
	if err := httpjson.Decode(w, r, &req, maxSecretBody); err != nil {
		return err
	}
	p := principal(r)
	info, created, err := s.secrets.Set(r.Context(), p.TenantID, name, req.Value)
	if err != nil {
		return err
	}
	s.log.Info("secret set", "tenant", p.TenantID, "name", name, "created", created, "by", p.TokenID)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpjson.Write(w, status, secretOf(info))
	return nil
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	infos, err := s.secrets.List(r.Context(), principal(r).TenantID)
	if err != nil {
		return err
	}
	list := cpapi.SecretList{Secrets: make([]cpapi.Secret, 0, len(infos))}
	for _, in := range infos {
		list.Secrets = append(list.Secrets, secretOf(in))
	}
	httpjson.Write(w, http.StatusOK, list)
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	p, name := principal(r), r.PathValue("name")
	if err := s.secrets.Delete(r.Context(), p.TenantID, name); err != nil {
		return err
	}
	s.log.Info("secret deleted", "tenant", p.TenantID, "name", name, "by", p.TokenID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func secretOf(in secrets.Info) cpapi.Secret {
	return cpapi.Secret{Name: in.Name, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt}
}
