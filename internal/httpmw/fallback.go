package httpmw

import (
	"net/http"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
)

// ProblemFallback answers requests no route matches with problem+json
// instead of ServeMux's plain text: 405 (with Allow) when the path exists
// under another method, 404 otherwise.
func ProblemFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := mux.Handler(r); pattern == "" {
			probe := &headerProbe{header: http.Header{}}
			h.ServeHTTP(probe, r)
			if probe.status == http.StatusMethodNotAllowed {
				w.Header().Set("Allow", probe.header.Get("Allow"))
				problem.Write(w, r, &errdefs.Error{Class: errdefs.ErrMethod, Msg: "method " + r.Method + " not allowed here"})
				return
			}
			problem.Write(w, r, errdefs.NotFoundf("no route for %s %s", r.Method, r.URL.Path))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// headerProbe captures what ServeMux's own 404/405 handler would send.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }
