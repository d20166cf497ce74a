package sandboxd

import (
	"net/http"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/httpjson"
)

// createForward answers POST /v1/forwards: 201 and the Forward.
func (s *Server) createForward(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.ForwardRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	f, err := s.forwards.Open(req.ListenPort, req.Socket)
	if err != nil {
		return err
	}
	s.log.Info("forward opened", "id", f.ID, "port", f.Port, "socket", f.Socket)
	httpjson.Write(w, http.StatusCreated, f)
	return nil
}

// listForwards answers GET /v1/forwards.
func (s *Server) listForwards(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, sandboxapi.ForwardList{Forwards: s.forwards.List()})
	return nil
}

// deleteForward answers DELETE /v1/forwards/{id}: 204.
func (s *Server) deleteForward(w http.ResponseWriter, r *http.Request) error {
	if err := s.forwards.Close(r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
