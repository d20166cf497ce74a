package sandboxd

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/desktop"
)

// Limits of the desktop routes.
const (
	maxActionBody = 64 << 10
	maxVNCFrame   = 1 << 20 // largest client frame on the VNC WebSocket
)

// desktopAPI serves /v1/desktop/*: the virtual display, screenshots,
// actions, windows, and the VNC WebSocket with the noVNC client that
// speaks it. The desktop's processes belong to the desktop.Desktop, which
// the Server stops on Close.
type desktopAPI struct {
	s *Server
	d *desktop.Desktop
}

func newDesktopAPI(s *Server) *desktopAPI {
	return &desktopAPI{s: s, d: desktop.New(desktop.Options{KillGrace: s.cfg.KillGrace, Logger: s.log})}
}

func (a *desktopAPI) close() { a.d.Close() }

// start answers POST /v1/desktop/start: 201 when it started the desktop,
// 200 when it was running already. An empty body takes the defaults.
func (a *desktopAPI) start(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.DesktopStartRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpjson.DefaultLimit))
	if err != nil {
		return errdefs.Wrap(errdefs.ErrInvalid, err, "reading the request body failed")
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := httpjson.Unmarshal(body, &req); err != nil {
			return err
		}
	}
	st, created, err := a.d.Start(r.Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpjson.Write(w, status, st)
	return nil
}

// stop answers POST /v1/desktop/stop: 204 once every process of the
// desktop has exited.
func (a *desktopAPI) stop(w http.ResponseWriter, r *http.Request) error {
	if err := a.d.Stop(r.Context()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// status answers GET /v1/desktop/status; 404 when this sandbox has no
// desktop (no Xvfb).
func (a *desktopAPI) status(w http.ResponseWriter, r *http.Request) error {
	st, err := a.d.Status()
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, st)
	return nil
}

// screenshot answers GET /v1/desktop/screenshot?x=&y=&w=&h=&scale= with
// a PNG.
func (a *desktopAPI) screenshot(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var reg desktop.Region
	for _, p := range []struct {
		name string
		v    *int
	}{{"x", &reg.X}, {"y", &reg.Y}, {"w", &reg.Width}, {"h", &reg.Height}} {
		if raw := q.Get(p.name); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil {
				return errdefs.Invalidf("%s must be a whole number of pixels", p.name)
			}
			*p.v = n
		}
	}
	if raw := q.Get("scale"); raw != "" {
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errdefs.Invalidf("scale must be a number")
		}
		reg.Scale = f
	}
	img, err := a.d.Screenshot(r.Context(), reg)
	if err != nil {
		return err
	}
	buf := pngBufs.Get().(*bytes.Buffer)
	defer pngBufs.Put(buf)
	buf.Reset()
	if err := desktop.EncodePNG(buf, img); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// pngBufs holds encoded screenshots between requests.
var pngBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// action answers POST /v1/desktop/action.
func (a *desktopAPI) action(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.DesktopAction
	if err := httpjson.Decode(w, r, &req, maxActionBody); err != nil {
		return err
	}
	res, err := a.d.Do(r.Context(), req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// windows answers GET /v1/desktop/windows.
func (a *desktopAPI) windows(w http.ResponseWriter, r *http.Request) error {
	list, err := a.d.Windows(r.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []sandboxapi.DesktopWindow{}
	}
	httpjson.Write(w, http.StatusOK, sandboxapi.DesktopWindowList{Windows: list})
	return nil
}

// vnc answers GET /v1/desktop/vnc: a WebSocket whose binary messages are
// the bytes of a connection to the desktop's VNC server (what noVNC
// and websockify speak; the "binary" subprotocol is accepted when asked
// for). It ends when either side closes, the desktop stops, or the daemon
// shuts down.
//
// Origin is not checked: every request is authenticated by bearer token
// (never by cookie), so a cross-site page cannot ride on a user's session.
func (a *desktopAPI) vnc(w http.ResponseWriter, r *http.Request) error {
	sock, err := a.d.VNCSocket()
	if err != nil {
		return err
	}
	var dialer net.Dialer
	vncConn, err := dialer.DialContext(r.Context(), "unix", sock)
	if err != nil {
		return errdefs.Wrap(errdefs.ErrBadGateway, err, "the desktop's VNC server does not answer")
	}
	defer vncConn.Close()
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       []string{"binary"},
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		a.s.log.Debug("websocket accept failed", "err", err)
		return nil // Accept has answered
	}
	conn.SetReadLimit(maxVNCFrame)
	ws := websocket.NetConn(r.Context(), conn, websocket.MessageBinary)

	// One goroutine copies each way; the first to end (either side
	// closed) or the daemon's shutdown ends both: the VNC connection is
	// closed, and the WebSocket with a close frame.
	ended := make(chan string, 2)
	go func() {
		_, _ = io.Copy(ws, vncConn)
		ended <- "the VNC server closed the connection"
	}()
	go func() {
		_, _ = io.Copy(vncConn, ws)
		ended <- ""
	}()
	status, reason, running := websocket.StatusNormalClosure, "", 2
	select {
	case reason = <-ended:
		running--
	case <-a.s.stopping:
		status, reason = websocket.StatusGoingAway, "the daemon is shutting down"
	}
	vncConn.Close()
	_ = conn.Close(status, reason)
	for ; running > 0; running-- {
		<-ended
	}
	return nil
}

// novncIndex answers GET /v1/desktop/novnc: a page that moves to
// novnc/vnc.html keeping the query and fragment (a redirect by the server
// would lose the access token, which the control plane removes before
// forwarding).
func (a *desktopAPI) novncIndex(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	_, _ = io.WriteString(w, `<!DOCTYPE html><meta charset="utf-8"><title>noVNC</title>`+
		`<script>location.replace("novnc/vnc.html" + location.search + location.hash)</script>`)
	return nil
}

// novnc answers GET /v1/desktop/novnc/{path...} with the noVNC web
// client's files; the directory itself is its vnc.html page.
func (a *desktopAPI) novnc(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("path")
	if name == "" {
		name = "vnc.html"
	}
	f, err := a.d.NoVNC(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if f.Page {
		// The page's URL carries the token: keep it out of Referer
		// headers and out of caches.
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
	} else {
		h.Set("Cache-Control", "private, max-age=3600")
	}
	http.ServeContent(w, r, f.Name, f.ModTime, f.Content)
	return nil
}
