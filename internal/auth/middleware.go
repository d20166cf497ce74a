package auth

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/internal/httpmw"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
)

// Middleware requires a valid token on every request and passes the
// request on with its Principal in the context (FromContext). The token
// comes from "Authorization: Bearer <token>" or, for browsers' WebSocket
// and EventSource, which cannot set headers, the access_token query
// parameter.
//
// A missing or invalid token is 401 with WWW-Authenticate; a tenant over
// its rate is 429 with Retry-After. The credentials are removed from the
// request next sees (the Authorization header, the access_token
// parameter), so no handler can log them or forward them, to a sandbox
// say. Routes that need no token are mounted outside this middleware.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, fromQuery, ok := bearer(r)
		if !ok {
			unauthorized(w, r, errNoToken)
			return
		}
		now := a.now()
		p, lim, err := a.authenticate(r.Context(), secret, now)
		if err != nil {
			unauthorized(w, r, err)
			return
		}
		if lim != nil {
			if ok, retry := allow(lim, now); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(retry))
				problem.Write(w, r, errdefs.Wrap(errdefs.ErrRateLimited, nil,
					"too many requests for this tenant; retry after "+strconv.Itoa(retry)+"s"))
				return
			}
		}
		// The store writes at most once a minute per token; a failure
		// to record the use must not fail the request.
		if err := a.st.TouchToken(r.Context(), p.TokenID); err != nil && r.Context().Err() == nil {
			a.log.Warn("auth: cannot record token use", "token", p.TokenID, "err", err)
		}

		// A handler must not modify its Request, so r is copied, and the
		// header map too (not the value slices, which nobody changes).
		r = r.WithContext(withPrincipal(r.Context(), p))
		if !fromQuery {
			r.Header = withoutAuthorization(r.Header)
		} else {
			u := *r.URL
			u.RawQuery = httpmw.WithoutQueryParam(u.RawQuery, "access_token")
			r.URL = &u
			r.RequestURI = u.RequestURI()
		}
		next.ServeHTTP(w, r)
	})
}

// unauthorized writes err, adding the challenge of RFC 6750 to a 401.
func unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errBadToken):
		w.Header().Set("WWW-Authenticate", `Bearer realm="corral", error="invalid_token"`)
	case errors.Is(err, errdefs.ErrUnauthorized):
		w.Header().Set("WWW-Authenticate", `Bearer realm="corral"`)
	}
	problem.Write(w, r, err)
}

// bearer returns the request's token. An Authorization header decides
// alone: with another scheme, or an empty token, ok is false even if
// access_token is set.
func bearer(r *http.Request) (secret string, fromQuery, ok bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, found := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", false, false
		}
		return tok, false, true
	}
	if r.URL.RawQuery == "" {
		return "", false, false
	}
	tok := r.URL.Query().Get("access_token")
	return tok, true, tok != ""
}

// withoutAuthorization returns a copy of h without Authorization.
func withoutAuthorization(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if k != "Authorization" {
			out[k] = v
		}
	}
	return out
}
