package sandboxd

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd/procs"
)

// Limits of the connect protocol.
const (
	connectFrame      = 64 << 10 // largest output payload per binary frame
	maxInputFrame     = 1 << 20  // largest client frame
	connectWriteLimit = 30 * time.Second
)

// connectProcess attaches a WebSocket to a process (DESIGN.md §2,
// "Connect"). It replays retained output from ?offset= (default: the
// oldest retained byte), then streams live output until the process has
// exited and all its output was sent, then sends an exit frame and closes.
// The 101 response's X-Offset header gives the offset replay starts at.
//
// Each connection reads the output log at its own pace from its own
// offset: the process and other clients never wait for it. A connection
// that falls further behind than the retention window skips ahead and is
// told so with a truncated frame naming the offset it resumes from; one
// that stops reading entirely is dropped after connectWriteLimit.
//
// Client frames: binary = input; text = JSON resize, signal, close_stdin.
// A control frame that fails is answered with {"type":"error","detail"}
// and the connection stays open. Closing the connection never touches the
// process.
//
// Origin is not checked: every request is authenticated by bearer token
// (never by cookie), so a cross-site page cannot ride on a user's session.
func (s *Server) connectProcess(w http.ResponseWriter, r *http.Request) error {
	offset, err := queryInt(r.URL.Query().Get("offset"), -1, "offset")
	if err != nil {
		return err
	}
	p, err := s.procs.Get(r.PathValue("ref"))
	if err != nil {
		return err
	}
	// The upgrade response names the offset the replay starts from, so a
	// client that asked for "oldest" can track offsets from the first byte.
	start, _ := p.Log().Bounds()
	if offset < 0 {
		offset = start
	}
	w.Header().Set(sandboxapi.HeaderOffset, strconv.FormatInt(max(offset, start), 10))
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		s.log.Debug("websocket accept failed", "err", err)
		return nil // Accept has answered
	}
	conn.SetReadLimit(maxInputFrame)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		s.connectReader(ctx, conn, p)
	}()
	s.connectWriter(ctx, conn, p, offset)
	cancel()
	<-readerDone
	return nil
}

// connectWriter streams output from offset (>= 0) until the process is done or
// ctx ends, then closes the connection.
func (s *Server) connectWriter(ctx context.Context, conn *websocket.Conn, p *procs.Process, offset int64) {
	log := p.Log()
	buf := make([]byte, 1+connectFrame)
	for {
		c := log.Read(offset, buf[1:])
		if c.Truncated {
			if s.writeControl(ctx, conn, sandboxapi.ControlFrame{Type: sandboxapi.FrameTruncated, From: c.Offset}) != nil {
				return
			}
		}
		if c.N > 0 {
			buf[0] = c.Stream
			if s.writeFrame(ctx, conn, websocket.MessageBinary, buf[:1+c.N]) != nil {
				return
			}
			offset = c.Offset + int64(c.N)
			continue
		}
		offset = c.Offset
		if c.EOF {
			code, sig := p.ExitStatus()
			if s.writeControl(ctx, conn, sandboxapi.ControlFrame{Type: sandboxapi.FrameExit, ExitCode: code, Signal: sig}) == nil {
				conn.Close(websocket.StatusNormalClosure, "process exited")
			}
			return
		}
		select {
		case <-c.Wait:
		case <-ctx.Done():
			conn.CloseNow()
			return
		case <-s.stopping:
			conn.Close(websocket.StatusGoingAway, "sandboxd is shutting down")
			return
		}
	}
}

func (s *Server) writeFrame(ctx context.Context, conn *websocket.Conn, typ websocket.MessageType, b []byte) error {
	wctx, cancel := context.WithTimeout(ctx, connectWriteLimit)
	defer cancel()
	return conn.Write(wctx, typ, b)
}

func (s *Server) writeControl(ctx context.Context, conn *websocket.Conn, f sandboxapi.ControlFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return s.writeFrame(ctx, conn, websocket.MessageText, b)
}

// connectReader applies client frames until the connection ends.
func (s *Server) connectReader(ctx context.Context, conn *websocket.Conn, p *procs.Process) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			err = p.WriteInput(data)
		} else {
			err = applyControl(p, data)
		}
		if err != nil {
			f := sandboxapi.ControlFrame{Type: sandboxapi.FrameError, Detail: problem.From(err).Detail}
			if s.writeControl(ctx, conn, f) != nil {
				return
			}
		}
	}
}

func applyControl(p *procs.Process, data []byte) error {
	f, err := sandboxapi.ParseClientFrame(data)
	if err != nil {
		if errors.Is(err, sandboxapi.ErrBadFrame) {
			return errdefs.Invalidf("%v", err)
		}
		return err
	}
	switch f.Type {
	case sandboxapi.FrameResize:
		return p.Resize(f.Rows, f.Cols)
	case sandboxapi.FrameSignal:
		sig, err := procs.ParseSignal(*f.Signal)
		if err != nil {
			return err
		}
		return p.Signal(sig)
	default: // FrameCloseStdin; ParseClientFrame allows nothing else
		return p.CloseStdin()
	}
}
