package sandboxd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/httpjson"
	"github.com/corral-sh/corral/internal/sandboxd/browser"
)

// maxBrowserBody bounds a browser request body (a URL, a script, text to
// type).
const maxBrowserBody = 4 << 20

// browserAPI serves /v1/browser/*: the sandbox's Chromium and its tabs.
// The browser belongs to the browser.Manager, which the Server closes on
// shutdown (after ending in-flight operations: every operation's context
// also ends when shutdown begins).
//
// Statuses, where the contract leaves them open:
//
//	400  malformed body or parameter; a selector that is not CSS; a URL
//	     of another scheme than http, https, file, data, about
//	404  no browser binary in the sandbox; an unknown or closed tab; no
//	     element matching a selector (click, type) within timeout_ms; an
//	     unknown node_id
//	409  start asking for another mode than the running browser's; too
//	     many tabs
//	413  an eval result over 8 MiB of JSON
//	422  a script that throws (detail: the exception); an element with no
//	     visible box; an element that cannot take focus; a browser that
//	     does not start
//	502  a navigation the network refused (detail: net::ERR_…)
//	503  the browser stopped during the operation; shutting down
//	504  navigation, wait or script over its timeout
type browserAPI struct {
	m *browser.Manager
	// life ends when shutdown begins.
	life context.Context
}

func newBrowserAPI(s *Server) *browserAPI {
	life, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stopping
		cancel()
	}()
	m := browser.NewManager(browser.Options{
		// The desktop's display when it runs, else $DISPLAY if it is up.
		Display: func() string {
			if s.desktop != nil {
				if d, err := s.desktop.d.Display(); err == nil {
					return d
				}
			}
			return browser.EnvDisplay()
		},
		Logger: s.log,
	})
	return &browserAPI{m: m, life: life}
}

func (a *browserAPI) close() { a.m.Close() }

// ctx is the context of one operation: the request's, ended early when
// shutdown begins.
func (a *browserAPI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(a.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// status answers GET /v1/browser; 404 when the sandbox has no browser.
func (a *browserAPI) status(w http.ResponseWriter, r *http.Request) error {
	st, err := a.m.Status()
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, st)
	return nil
}

// start answers POST /v1/browser/start (an empty body takes the
// defaults): 200 with the browser, started or already running.
func (a *browserAPI) start(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.BrowserStartRequest
	if err := decodeOptional(w, r, &req, httpjson.DefaultLimit); err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	st, err := a.m.Start(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, st)
	return nil
}

// stop answers POST /v1/browser/stop: 204 once the browser and every
// process it started are gone, or if none was running.
func (a *browserAPI) stop(w http.ResponseWriter, r *http.Request) error {
	if err := a.m.Stop(r.Context()); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listTabs answers GET /v1/browser/tabs.
func (a *browserAPI) listTabs(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := a.ctx(r)
	defer cancel()
	tabs, err := a.m.Tabs(ctx)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, sandboxapi.TabList{Tabs: tabs})
	return nil
}

// openTab answers POST /v1/browser/tabs (an empty body opens
// about:blank): 201 Tab, starting the browser if needed.
func (a *browserAPI) openTab(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.TabRequest
	if err := decodeOptional(w, r, &req, maxBrowserBody); err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	tab, err := a.m.OpenTab(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusCreated, tab)
	return nil
}

// tab finds the tab of the request's {id}.
func (a *browserAPI) tab(r *http.Request) (*browser.Tab, error) {
	return a.m.Tab(r.PathValue("id"))
}

// getTab answers GET /v1/browser/tabs/{id}.
func (a *browserAPI) getTab(w http.ResponseWriter, r *http.Request) error {
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	return a.writeTab(w, r, t)
}

func (a *browserAPI) writeTab(w http.ResponseWriter, r *http.Request, t *browser.Tab) error {
	ctx, cancel := a.ctx(r)
	defer cancel()
	tab, err := t.Describe(ctx)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, tab)
	return nil
}

// closeTab answers DELETE /v1/browser/tabs/{id}: 204.
func (a *browserAPI) closeTab(w http.ResponseWriter, r *http.Request) error {
	if err := a.m.CloseTab(r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// navigate answers POST /v1/browser/tabs/{id}/navigate with the Tab.
func (a *browserAPI) navigate(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.NavigateRequest
	if err := httpjson.Decode(w, r, &req, maxBrowserBody); err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	tab, err := t.Navigate(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, tab)
	return nil
}

// click answers POST /v1/browser/tabs/{id}/click with the Tab after it.
func (a *browserAPI) click(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.ClickRequest
	if err := httpjson.Decode(w, r, &req, maxBrowserBody); err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if err := t.Click(ctx, req); err != nil {
		return err
	}
	return a.writeTab(w, r, t)
}

// typeText answers POST /v1/browser/tabs/{id}/type with the Tab after it.
func (a *browserAPI) typeText(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.TypeRequest
	if err := httpjson.Decode(w, r, &req, maxBrowserBody); err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if err := t.Type(ctx, req); err != nil {
		return err
	}
	return a.writeTab(w, r, t)
}

// wait answers POST /v1/browser/tabs/{id}/wait with the Tab after it.
func (a *browserAPI) wait(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.WaitRequest
	if err := httpjson.Decode(w, r, &req, 0); err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	if err := t.Wait(ctx, req); err != nil {
		return err
	}
	return a.writeTab(w, r, t)
}

// text answers GET /v1/browser/tabs/{id}/text?max_bytes=.
func (a *browserAPI) text(w http.ResponseWriter, r *http.Request) error {
	n, err := queryInt(r.URL.Query().Get("max_bytes"), browser.DefaultTextBytes, "max_bytes")
	if err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	out, err := t.Text(ctx, int(min(n, 1<<31)))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// ax answers GET /v1/browser/tabs/{id}/ax?max_nodes=.
func (a *browserAPI) ax(w http.ResponseWriter, r *http.Request) error {
	n, err := queryInt(r.URL.Query().Get("max_nodes"), browser.DefaultAXNodes, "max_nodes")
	if err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	out, err := t.AX(ctx, int(min(n, 1<<31)))
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// eval answers POST /v1/browser/tabs/{id}/eval.
func (a *browserAPI) eval(w http.ResponseWriter, r *http.Request) error {
	var req sandboxapi.EvalRequest
	if err := httpjson.Decode(w, r, &req, maxBrowserBody); err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	out, err := t.Eval(ctx, req)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// screenshot answers GET /v1/browser/tabs/{id}/screenshot?full_page=
// with image/png.
func (a *browserAPI) screenshot(w http.ResponseWriter, r *http.Request) error {
	full, err := queryBool(r.URL.Query().Get("full_page"), "full_page")
	if err != nil {
		return err
	}
	t, err := a.tab(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	png, err := t.Screenshot(ctx, full)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.Itoa(len(png)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(png)
	return nil
}

// decodeOptional decodes a JSON body strictly, leaving v as it is when
// the body is empty.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errdefs.TooLargef("request body exceeds %d bytes", limit)
		}
		return errdefs.Wrap(errdefs.ErrInvalid, err, "reading the request body failed")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return httpjson.Unmarshal(body, v)
}
