package sandboxd

import (
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd/outlog"
	"github.com/corral-sh/corral/internal/sse"
)

// maxExecBody caps an exec request, stdin included.
const maxExecBody = 16 << 20

// exec runs a command to completion. With Accept: text/event-stream the
// output streams as stdout/stderr events and a final exit event.
// Closing the request kills the command's process tree.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.ExecRequest
	if err := httpjson.Decode(w, r, &req, maxExecBody); err != nil {
		return err
	}
	e, err := s.procs.NewExec(req)
	if err != nil {
		return err
	}
	if !acceptsEventStream(r) {
		res, err := e.Run(r.Context(), nil)
		if err != nil {
			return err
		}
		httpjson.Write(w, http.StatusOK, res)
		return nil
	}
	stream := sse.Start(w)
	var werr error
	res, err := e.Run(r.Context(), func(st byte, p []byte) {
		if werr != nil {
			return
		}
		name := sandboxapi.ExecEventStdout
		if st == outlog.Stderr {
			name = sandboxapi.ExecEventStderr
		}
		var c sandboxapi.ExecChunk
		if utf8.Valid(p) {
			c.Data = string(p)
		} else {
			c.DataBase64 = base64.StdEncoding.EncodeToString(p)
		}
		werr = stream.Event("", name, c)
	})
	if err != nil {
		_ = stream.Event("", sandboxapi.ExecEventError, problem.From(err))
		return nil
	}
	res.Stdout, res.Stderr = "", ""
	_ = stream.Event("", sandboxapi.ExecEventExit, res)
	return nil
}

func acceptsEventStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}
