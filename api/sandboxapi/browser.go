package sandboxapi

import (
	"encoding/json"
	"time"
)

// Wait conditions of a navigation (NavigateRequest.Wait, TabRequest.Wait).
const (
	// WaitLoad waits for the page's load event (the default).
	WaitLoad = "load"
	// WaitNetworkIdle waits for the load event and then for a moment with
	// no request in flight (500 ms).
	WaitNetworkIdle = "networkidle"
	// WaitNone returns as soon as the navigation is committed.
	WaitNone = "none"
)

// BrowserStartRequest is the body of POST /v1/browser/start. Every field
// is optional. Headless defaults to true unless an X display is up (the
// desktop's, or $DISPLAY); Display names one explicitly and implies a
// window. Width and Height size the window, and the viewport of every tab
// of a headless browser (default 1280x800).
type BrowserStartRequest struct {
	Headless *bool  `json:"headless,omitempty"`
	Display  string `json:"display,omitempty"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
}

// Browser is the body of GET /v1/browser and of POST /v1/browser/start:
// the sandbox's one browser. Executable is the binary found (chromium,
// chromium-browser, google-chrome); the other fields describe the running
// browser and are zero when it is not running.
type Browser struct {
	Running    bool       `json:"running"`
	Executable string     `json:"executable"`
	Version    string     `json:"version,omitempty"` // "Chrome/156.0.8078.79"
	PID        int        `json:"pid,omitempty"`
	Headless   bool       `json:"headless"`
	Display    string     `json:"display,omitempty"`
	Width      int        `json:"width,omitempty"`
	Height     int        `json:"height,omitempty"`
	Tabs       int        `json:"tabs"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
}

// TabRequest is the body of POST /v1/browser/tabs: open a tab, starting
// the browser with its defaults if it is not running. An empty URL opens
// about:blank. Wait and TimeoutMS are as in NavigateRequest.
type TabRequest struct {
	URL       string `json:"url,omitempty"`
	Wait      string `json:"wait,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// Tab is one browser tab: a session that lives until it is closed, the
// browser stops or the page closes itself. Status is the HTTP status of
// the last navigation's main document (0 when unknown, for instance for
// about:blank).
type Tab struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Title     string    `json:"title"`
	Status    int       `json:"status,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// TabList is the body of GET /v1/browser/tabs.
type TabList struct {
	Tabs []Tab `json:"tabs"`
}

// NavigateRequest is the body of POST /v1/browser/tabs/{id}/navigate. URL
// schemes: http, https, file, data and about. Wait is WaitLoad (default),
// WaitNetworkIdle or WaitNone; TimeoutMS bounds the whole navigation
// (default 30000).
type NavigateRequest struct {
	URL       string `json:"url"`
	Wait      string `json:"wait,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// ClickRequest is the body of POST /v1/browser/tabs/{id}/click. Exactly one
// of Selector (CSS, waited for until TimeoutMS, default 5000) and NodeID
// (a node_id from GET …/ax) names the element, which gets a real mouse
// click at the centre of its box, after scrolling it into view.
type ClickRequest struct {
	Selector  string `json:"selector,omitempty"`
	NodeID    int64  `json:"node_id,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// TypeRequest is the body of POST /v1/browser/tabs/{id}/type: focus the
// element (as ClickRequest names it), optionally clear it, insert Text,
// and with Submit press Enter.
type TypeRequest struct {
	Selector  string `json:"selector,omitempty"`
	NodeID    int64  `json:"node_id,omitempty"`
	Text      string `json:"text"`
	Clear     bool   `json:"clear,omitempty"`
	Submit    bool   `json:"submit,omitempty"`
	TimeoutMS int    `json:"timeout_ms,omitempty"`
}

// WaitRequest is the body of POST /v1/browser/tabs/{id}/wait: wait until
// the Selector matches an element, and/or until the network is idle (no
// request in flight for 500 ms). TimeoutMS defaults to 30000.
type WaitRequest struct {
	Selector    string `json:"selector,omitempty"`
	NetworkIdle bool   `json:"network_idle,omitempty"`
	TimeoutMS   int    `json:"timeout_ms,omitempty"`
}

// PageText is the body of GET /v1/browser/tabs/{id}/text: the page's
// rendered text (innerText of the body), cut at ?max_bytes= (default
// 1 MiB) on a UTF-8 boundary, with Truncated saying so.
type PageText struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// AXNode is one node of a page's accessibility tree, flattened in
// document order: Depth is its level below the root (0). NodeID is the
// node's DOM node (a backend node id), usable as node_id by click and
// type while the page stays loaded; 0 when the node has none. Props holds
// the states that are set: focused, checked, disabled, expanded,
// selected, required, ...
type AXNode struct {
	NodeID int64          `json:"node_id,omitempty"`
	Role   string         `json:"role"`
	Name   string         `json:"name,omitempty"`
	Value  string         `json:"value,omitempty"`
	Depth  int            `json:"depth"`
	Props  map[string]any `json:"props,omitempty"`
}

// AXTree is the body of GET /v1/browser/tabs/{id}/ax. Ignored nodes and
// anonymous containers are left out (their children move up); the list
// stops at ?max_nodes= (default 5000) with Truncated set.
type AXTree struct {
	URL       string   `json:"url"`
	Title     string   `json:"title"`
	Nodes     []AXNode `json:"nodes"`
	Truncated bool     `json:"truncated"`
}

// EvalRequest is the body of POST /v1/browser/tabs/{id}/eval. Expression
// runs in the page; a promise is awaited. TimeoutMS (default 30000) stops
// the script.
type EvalRequest struct {
	Expression string `json:"expression"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
}

// EvalResult is the answer to an eval: Type is the JavaScript type
// ("number", "string", "object", "undefined", ...), Value the result as
// JSON (null for undefined and for values JSON cannot carry, which
// Description then describes, like "HTMLDivElement" or "function f()").
// A thrown exception is a 422 problem whose detail is the exception text.
type EvalResult struct {
	Type        string          `json:"type"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description,omitempty"`
}
