package browser

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// MaxTabs caps the open tabs.
	MaxTabs = 64
	// DefaultTimeout bounds an operation whose request gives none.
	DefaultTimeout = 30 * time.Second
	// MaxTimeout caps timeout_ms.
	MaxTimeout = 10 * time.Minute
	// tabOpenTimeout bounds the creation of a tab.
	tabOpenTimeout = 30 * time.Second
)

// Tab is one open tab of the browser. Its chromedp context lives until the
// tab is closed, the page goes away or the browser ends.
type Tab struct {
	id       string
	in       *instance
	ctx      context.Context
	cancel   context.CancelFunc
	targetID target.ID
	created  time.Time
	net      *netTracker

	mu     sync.Mutex
	status int // HTTP status of the last navigation's document
}

// ID returns the tab's id.
func (t *Tab) ID() string { return t.id }

// OpenTab opens a tab, starting the browser if none runs, and navigates it
// to req.URL when there is one.
func (m *Manager) OpenTab(ctx context.Context, req sandboxapi.TabRequest) (sandboxapi.Tab, error) {
	if req.URL != "" {
		if err := checkURL(req.URL); err != nil {
			return sandboxapi.Tab{}, err
		}
	}
	wait, timeout, err := navOptions(req.Wait, req.TimeoutMS)
	if err != nil {
		return sandboxapi.Tab{}, err
	}
	m.mu.Lock()
	n := len(m.tabs)
	m.mu.Unlock()
	if n >= MaxTabs {
		return sandboxapi.Tab{}, errdefs.Conflictf("too many tabs open (limit %d); close some first", MaxTabs)
	}
	in, err := m.ensure(ctx)
	if err != nil {
		return sandboxapi.Tab{}, err
	}
	t := &Tab{id: newID("t_"), in: in, created: time.Now(), net: newNetTracker()}
	t.ctx, t.cancel = chromedp.NewContext(in.root, chromedp.WithNewWindow(false), chromedp.WithListener(t.net.observe))

	// The first Run binds the tab's life to t.ctx: bound it from outside.
	timer := time.AfterFunc(tabOpenTimeout, t.cancel)
	stopAfter := context.AfterFunc(ctx, t.cancel)
	err = chromedp.Do(t.ctx)
	inTime, notCancelled := timer.Stop(), stopAfter()
	opened := inTime && notCancelled
	if err != nil || !opened {
		t.cancel()
		if err == nil {
			err = context.Canceled
		}
		return sandboxapi.Tab{}, t.fail(ctx, ctx, err, "opening a tab")
	}
	t.targetID = chromedp.FromContext(t.ctx).Target.TargetID
	detached, err := chromedp.Detached(t.ctx)
	if err == nil && in.cfg.Headless {
		// A headless window's viewport is smaller than the window by
		// browser chrome that is not drawn: give it the size asked for.
		octx, done := t.op(ctx, 10*time.Second)
		_, err = chromedp.Call(octx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: int64(in.cfg.Width), Height: int64(in.cfg.Height), DeviceScaleFactor: 1,
		})
		done()
	}
	if err != nil {
		t.cancel()
		return sandboxapi.Tab{}, t.fail(ctx, ctx, err, "opening a tab")
	}

	m.mu.Lock()
	if m.inst != in || m.closed {
		m.mu.Unlock()
		t.cancel()
		return sandboxapi.Tab{}, errdefs.Unavailablef("the browser stopped while the tab opened")
	}
	m.tabs[t.id] = t
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watchTab(t, detached)

	if req.URL != "" {
		return t.navigate(ctx, req.URL, wait, timeout)
	}
	return t.describe(ctx)
}

// watchTab forgets t when its page goes away by itself.
func (m *Manager) watchTab(t *Tab, detached <-chan struct{}) {
	defer m.wg.Done()
	select {
	case <-detached:
		m.mu.Lock()
		if m.tabs[t.id] == t {
			delete(m.tabs, t.id)
		}
		m.mu.Unlock()
		t.cancel()
	case <-t.ctx.Done():
	}
}

// Tab returns the open tab with id, or ErrNotFound.
func (m *Manager) Tab(id string) (*Tab, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tabs[id]
	if !ok {
		return nil, errdefs.NotFoundf("no tab %q", id)
	}
	return t, nil
}

// Tabs describes the open tabs, oldest first.
func (m *Manager) Tabs(ctx context.Context) ([]sandboxapi.Tab, error) {
	m.mu.Lock()
	tabs := make([]*Tab, 0, len(m.tabs))
	for _, t := range m.tabs {
		tabs = append(tabs, t)
	}
	in := m.inst
	m.mu.Unlock()
	out := []sandboxapi.Tab{}
	if in == nil || len(tabs) == 0 {
		return out, nil
	}
	slices.SortFunc(tabs, func(a, b *Tab) int { return a.created.Compare(b.created) })
	lctx, cancel := context.WithTimeout(in.root, 10*time.Second)
	defer cancel()
	stopAfter := context.AfterFunc(ctx, cancel)
	defer stopAfter()
	infos, err := chromedp.Targets(lctx)
	if err != nil {
		return nil, tabs[0].fail(ctx, lctx, err, "listing tabs")
	}
	byID := make(map[target.ID]*target.Info, len(infos))
	for _, ti := range infos {
		byID[ti.TargetID] = ti
	}
	for _, t := range tabs {
		if ti, ok := byID[t.targetID]; ok {
			out = append(out, t.wire(ti))
		}
	}
	return out, nil
}

// CloseTab closes the tab with id.
func (m *Manager) CloseTab(id string) error {
	m.mu.Lock()
	t, ok := m.tabs[id]
	delete(m.tabs, id)
	m.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("no tab %q", id)
	}
	t.cancel() // chromedp closes the target and waits for it to go
	return nil
}

func (t *Tab) wire(ti *target.Info) sandboxapi.Tab {
	t.mu.Lock()
	status := t.status
	t.mu.Unlock()
	return sandboxapi.Tab{ID: t.id, URL: ti.URL, Title: ti.Title, Status: status, CreatedAt: t.created.UTC()}
}

// describe returns the tab's URL and title as the browser has them.
func (t *Tab) describe(ctx context.Context) (sandboxapi.Tab, error) {
	octx, done := t.op(ctx, 10*time.Second)
	defer done()
	res, err := chromedp.CallBrowser(octx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: t.targetID})
	if err != nil {
		return sandboxapi.Tab{}, t.fail(ctx, octx, err, "describing the tab")
	}
	return t.wire(res.TargetInfo), nil
}

// Describe returns the tab's id, URL, title and last status.
func (t *Tab) Describe(ctx context.Context) (sandboxapi.Tab, error) { return t.describe(ctx) }

// op derives the context of one operation on the tab: it ends with the
// tab, after d, or when the caller's ctx ends.
func (t *Tab) op(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	octx, cancel := context.WithTimeout(t.ctx, d)
	stop := context.AfterFunc(ctx, cancel)
	return octx, func() { stop(); cancel() }
}

// Navigate loads req.URL in the tab and waits as req.Wait says.
func (t *Tab) Navigate(ctx context.Context, req sandboxapi.NavigateRequest) (sandboxapi.Tab, error) {
	if err := checkURL(req.URL); err != nil {
		return sandboxapi.Tab{}, err
	}
	wait, timeout, err := navOptions(req.Wait, req.TimeoutMS)
	if err != nil {
		return sandboxapi.Tab{}, err
	}
	return t.navigate(ctx, req.URL, wait, timeout)
}

func (t *Tab) navigate(ctx context.Context, u, wait string, timeout time.Duration) (sandboxapi.Tab, error) {
	octx, done := t.op(ctx, timeout)
	defer done()
	t.activate(octx)
	status := 0
	switch wait {
	case sandboxapi.WaitNone:
		res, err := chromedp.Call(octx, page.Navigate, page.NavigateParams{URL: u})
		if err == nil && res.ErrorText != "" {
			err = &chromedp.LoadError{ErrorText: res.ErrorText}
		}
		if err != nil {
			return sandboxapi.Tab{}, t.fail(ctx, octx, err, "navigation")
		}
	default:
		resp, err := chromedp.Run(octx, chromedp.NavigateResponse(u))
		if err != nil {
			return sandboxapi.Tab{}, t.fail(ctx, octx, err, "navigation")
		}
		if resp != nil {
			status = int(resp.Status)
		}
		if wait == sandboxapi.WaitNetworkIdle {
			if err := t.net.waitIdle(octx, IdleQuiet); err != nil {
				return sandboxapi.Tab{}, t.fail(ctx, octx, err, "waiting for network idle")
			}
		}
	}
	t.mu.Lock()
	t.status = status
	t.mu.Unlock()
	return t.describe(ctx)
}

// Wait waits until req.Selector matches an element and/or the network is
// idle.
func (t *Tab) Wait(ctx context.Context, req sandboxapi.WaitRequest) error {
	if req.Selector == "" && !req.NetworkIdle {
		return errdefs.Invalidf("nothing to wait for: give selector and/or network_idle")
	}
	timeout, err := timeoutOf(req.TimeoutMS, DefaultTimeout)
	if err != nil {
		return err
	}
	octx, done := t.op(ctx, timeout)
	defer done()
	if req.Selector != "" {
		found, err := t.waitSelector(octx, req.Selector, timeout)
		if err != nil {
			return t.fail(ctx, octx, err, "waiting for "+req.Selector)
		}
		if !found {
			return errdefs.Wrap(errdefs.ErrTimeout, nil, "no element matched "+quote(req.Selector)+" within "+timeout.String())
		}
	}
	if req.NetworkIdle {
		if err := t.net.waitIdle(octx, IdleQuiet); err != nil {
			return t.fail(ctx, octx, err, "waiting for network idle")
		}
	}
	return nil
}

// activate brings the tab to the front of a browser with a window, so a
// person watching the desktop sees what is done to it.
func (t *Tab) activate(ctx context.Context) {
	if t.in.cfg.Headless {
		return
	}
	_, _ = chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.targetID})
}

// navOptions validates a wait condition and a timeout.
func navOptions(wait string, timeoutMS int) (string, time.Duration, error) {
	switch wait {
	case "":
		wait = sandboxapi.WaitLoad
	case sandboxapi.WaitLoad, sandboxapi.WaitNetworkIdle, sandboxapi.WaitNone:
	default:
		return "", 0, errdefs.Invalidf("wait %q must be %q, %q or %q", wait, sandboxapi.WaitLoad, sandboxapi.WaitNetworkIdle, sandboxapi.WaitNone)
	}
	d, err := timeoutOf(timeoutMS, DefaultTimeout)
	return wait, d, err
}

// timeoutOf turns timeout_ms into a duration: def when 0.
func timeoutOf(ms int, def time.Duration) (time.Duration, error) {
	switch {
	case ms == 0:
		return def, nil
	case ms < 0:
		return 0, errdefs.Invalidf("timeout_ms must not be negative")
	case time.Duration(ms)*time.Millisecond > MaxTimeout:
		return 0, errdefs.Invalidf("timeout_ms must be at most %d", MaxTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// schemes are the URL schemes a tab may navigate to. javascript:,
// chrome: and devtools: URLs are refused: evaluate scripts with eval.
var schemes = []string{"http", "https", "file", "data", "about"}

func checkURL(raw string) error {
	if len(raw) > 2<<20 {
		return errdefs.Invalidf("url is longer than 2 MiB")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errdefs.Invalidf("url %s is malformed", quote(raw))
	}
	if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		return errdefs.Invalidf("url %s: the scheme must be one of %s", quote(raw), strings.Join(schemes, ", "))
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return errdefs.Invalidf("url %s has no host", quote(raw))
	}
	return nil
}
