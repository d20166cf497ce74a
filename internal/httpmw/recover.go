// Package httpmw holds the HTTP middleware Corral's servers share: panic
// recovery, the request log and metrics, and problem+json answers for
// unmatched routes. Each is a func(http.Handler) http.Handler or wraps a
// ServeMux; the servers chain them in one commented place.
package httpmw

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/corral-sh/corral/internal/problem"
)

// Recover turns a handler panic into a logged 500 problem.
// http.ErrAbortHandler is re-raised: it is how a handler aborts on purpose.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			problem.Write(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}()
		next.ServeHTTP(w, r)
	})
}
