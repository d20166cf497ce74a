package httpmw

import (
	"bytes"
	"io"
	"net/http"
)

// maxBuffered is the largest request body a proxy reads into memory
// before forwarding; bigger (or unknown-length) bodies stream.
const maxBuffered = 1 << 20

// PrepareProxyBody readies r's body for a reverse proxy. An HTTP/1 server
// discards an unread request body as soon as the handler starts its
// response, so an upstream that answers (or starts streaming) before it
// has read everything would have the rest of the body cut away. A small
// body of known length is therefore read into memory first (nothing stays
// unread on the connection, whatever happens upstream); a large or
// streamed one keeps flowing because full duplex is switched on. It
// fails only if reading the small body fails.
func PrepareProxyBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength >= 0 && r.ContentLength <= maxBuffered {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBuffered))
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	return http.NewResponseController(w).EnableFullDuplex()
}

// DrainBody reads and discards what is left of r's body, up to 1 MiB, so
// an early answer does not leave request bytes unread on the connection
// (closing it then makes the kernel reset it, and the client never reads
// the answer).
func DrainBody(r *http.Request) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBuffered))
	}
}
