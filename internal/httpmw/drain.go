package httpmw

import (
	"io"
	"net/http"
)

// maxDrain bounds how much of an unread request body DrainBody reads.
const maxDrain = 1 << 20

// DrainBody reads and discards what is left of r's body, up to 1 MiB.
// A handler that answers early with full duplex enabled (as the proxies
// do) calls it first: otherwise closing a connection with unread request
// bytes makes the kernel reset it, and the client never reads the answer.
func DrainBody(r *http.Request) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
	}
}
