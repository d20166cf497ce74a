package sandboxd

// PLACEHOLDER owned by the system helper; replaced wholesale.

import (
	"net/http"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/version"
)

type systemAPI struct{ s *Server }

func newSystemAPI(s *Server) *systemAPI { return &systemAPI{s: s} }

func (a *systemAPI) health(w http.ResponseWriter, r *http.Request) error {
	httpjson.Write(w, http.StatusOK, sandboxapi.Health{Status: "ok", Version: version.String(), UptimeMS: 0})
	return nil
}
func (a *systemAPI) info(w http.ResponseWriter, r *http.Request) error  { return errdefs.Unavailablef("pending") }
func (a *systemAPI) ports(w http.ResponseWriter, r *http.Request) error { return errdefs.Unavailablef("pending") }
func (a *systemAPI) proxy(w http.ResponseWriter, r *http.Request) error { return errdefs.Unavailablef("pending") }
