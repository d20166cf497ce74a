package sandboxd

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
)

// authenticate requires the configured bearer token, from the
// Authorization header or, for browsers' WebSocket and EventSource which
// cannot set headers, the access_token query parameter. With no token
// configured it passes everything through.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	want := []byte(s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="corral-sandboxd"`)
			problem.Write(w, r, errdefs.Unauthorizedf("a valid bearer token is required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", false
		}
		return strings.TrimSpace(tok), true
	}
	if tok := r.URL.Query().Get("access_token"); tok != "" {
		return tok, true
	}
	return "", false
}
