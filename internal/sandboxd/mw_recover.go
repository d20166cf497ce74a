package sandboxd

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/corral-sh/corral/internal/problem"
)

// recoverPanics turns a handler panic into a logged 500 problem.
// http.ErrAbortHandler is re-raised: it is how a handler aborts on purpose.
func recoverPanics(next http.Handler) http.Handler {
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
