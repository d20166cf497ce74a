package browser

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/dom"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/x", true},
		{"https://example.com", true},
		{"HTTP://EXAMPLE.COM", true},
		{"about:blank", true},
		{"data:text/html,<p>hi</p>", true},
		{"file:///workspace/index.html", true},
		{"javascript:alert(1)", false},
		{"chrome://settings", false},
		{"devtools://devtools/bundled/inspector.html", false},
		{"view-source:http://x", false},
		{"http:///nohost", false},
		{"not a url at all", false},
		{"://", false},
	} {
		err := checkURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("checkURL(%q) = %v; want ok=%v", c.url, err, c.ok)
		}
		if err != nil && !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("checkURL(%q) = %v; want ErrInvalid", c.url, err)
		}
	}
}

func TestConfig(t *testing.T) {
	yes, no := true, false
	up := NewManager(Options{Display: func() string { return ":1" }})
	down := NewManager(Options{Display: func() string { return "" }})
	for _, c := range []struct {
		name string
		m    *Manager
		req  sandboxapi.BrowserStartRequest
		want Config
		err  error
	}{
		{"defaults without a display", down, sandboxapi.BrowserStartRequest{}, Config{Headless: true, Width: 1280, Height: 800}, nil},
		{"defaults with a display", up, sandboxapi.BrowserStartRequest{}, Config{Display: ":1", Width: 1280, Height: 800}, nil},
		{"headless asked with a display", up, sandboxapi.BrowserStartRequest{Headless: &yes}, Config{Headless: true, Width: 1280, Height: 800}, nil},
		{"window asked without a display", down, sandboxapi.BrowserStartRequest{Headless: &no}, Config{}, errdefs.ErrUnprocessable},
		{"explicit display", down, sandboxapi.BrowserStartRequest{Display: ":99.0", Width: 640, Height: 480}, Config{Display: ":99.0", Width: 640, Height: 480}, nil},
		{"display and headless", up, sandboxapi.BrowserStartRequest{Display: ":2", Headless: &yes}, Config{}, errdefs.ErrInvalid},
		{"bad display", up, sandboxapi.BrowserStartRequest{Display: ":1;reboot"}, Config{}, errdefs.ErrInvalid},
		{"too small", up, sandboxapi.BrowserStartRequest{Width: 10}, Config{}, errdefs.ErrInvalid},
		{"too large", up, sandboxapi.BrowserStartRequest{Height: 100000}, Config{}, errdefs.ErrInvalid},
	} {
		got, err := c.m.config(c.req)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: config = %v; want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: config = %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestConflicts(t *testing.T) {
	yes, no := true, false
	cfg := Config{Headless: true, Width: 1280, Height: 800}
	for _, c := range []struct {
		req      sandboxapi.BrowserStartRequest
		conflict bool
	}{
		{sandboxapi.BrowserStartRequest{}, false},
		{sandboxapi.BrowserStartRequest{Headless: &yes}, false},
		{sandboxapi.BrowserStartRequest{Width: 1280}, false},
		{sandboxapi.BrowserStartRequest{Headless: &no}, true},
		{sandboxapi.BrowserStartRequest{Display: ":1"}, true},
		{sandboxapi.BrowserStartRequest{Height: 600}, true},
	} {
		if got := conflicts(cfg, c.req) != ""; got != c.conflict {
			t.Errorf("conflicts(%+v) = %v; want %v", c.req, got, c.conflict)
		}
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
		cut  bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"héllo", 2, "h", true}, // é is two bytes: not split
		{"🐄🐄", 5, "🐄", true},
		{"🐄", 3, "", true},
	} {
		got, cut := truncateUTF8(c.in, c.n)
		if got != c.want || cut != c.cut {
			t.Errorf("truncateUTF8(%q, %d) = %q, %v; want %q, %v", c.in, c.n, got, cut, c.want, c.cut)
		}
	}
}

func axValueOf(typ accessibility.ValueType, v any) *accessibility.Value {
	b, _ := json.Marshal(v)
	return &accessibility.Value{Type: typ, Value: b}
}

func TestFlattenAX(t *testing.T) {
	str := func(s string) *accessibility.Value { return axValueOf("string", s) }
	nodes := []*accessibility.Node{
		{NodeID: "1", Role: str("RootWebArea"), Name: str("Page"), ChildIDs: []accessibility.NodeID{"2", "5"}, BackendDOMNodeID: 10},
		{NodeID: "2", ParentID: "1", Role: str("generic"), ChildIDs: []accessibility.NodeID{"3", "4"}, BackendDOMNodeID: 11},
		{NodeID: "3", ParentID: "2", Role: str("button"), Name: str("Go"), ChildIDs: []accessibility.NodeID{"6"}, BackendDOMNodeID: 12,
			Properties: []*accessibility.Property{
				{Name: "focused", Value: axValueOf("boolean", true)},
				{Name: "disabled", Value: axValueOf("boolean", false)},
				{Name: "focusable", Value: axValueOf("boolean", true)},
			}},
		{NodeID: "4", ParentID: "2", Ignored: true, Role: str("none"), ChildIDs: []accessibility.NodeID{"7"}},
		{NodeID: "5", ParentID: "1", Role: str("heading"), Name: str("Title"), BackendDOMNodeID: 13,
			Properties: []*accessibility.Property{{Name: "level", Value: axValueOf("integer", 2)}}},
		{NodeID: "6", ParentID: "3", Role: str("StaticText"), Name: str("Go"), BackendDOMNodeID: 14}, // repeats its parent
		{NodeID: "7", ParentID: "4", Role: str("textbox"), Name: str("Name"), Value: str("Ada"), BackendDOMNodeID: 15},
	}
	got := flattenAX(nodes, 100)
	want := []sandboxapi.AXNode{
		{NodeID: 10, Role: "RootWebArea", Name: "Page", Depth: 0},
		{NodeID: 12, Role: "button", Name: "Go", Depth: 1, Props: map[string]any{"focused": true}},
		{NodeID: 15, Role: "textbox", Name: "Name", Value: "Ada", Depth: 1},
		{NodeID: 13, Role: "heading", Name: "Title", Depth: 1, Props: map[string]any{"level": float64(2)}},
	}
	gb, _ := json.Marshal(got.Nodes)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || got.Truncated {
		t.Errorf("flattenAX =\n%s\nwant\n%s", gb, wb)
	}
	if got := flattenAX(nodes, 2); len(got.Nodes) != 2 || !got.Truncated {
		t.Errorf("flattenAX with max 2 = %d nodes, truncated %v", len(got.Nodes), got.Truncated)
	}
	// A cycle in a malformed tree ends.
	loop := []*accessibility.Node{
		{NodeID: "1", Role: str("RootWebArea"), ChildIDs: []accessibility.NodeID{"2"}},
		{NodeID: "2", ParentID: "1", Role: str("button"), Name: str("x"), ChildIDs: []accessibility.NodeID{"1"}},
	}
	if got := flattenAX(loop, 100); len(got.Nodes) != 2 {
		t.Errorf("flattenAX of a cycle = %+v", got.Nodes)
	}
	if got := flattenAX(nil, 10); len(got.Nodes) != 0 {
		t.Errorf("flattenAX(nil) = %+v", got)
	}
}

func TestArea(t *testing.T) {
	if a := area(dom.Quad{0, 0, 10, 0, 10, 5, 0, 5}); a != 50 {
		t.Errorf("area of a 10x5 box = %v; want 50", a)
	}
	if a := area(dom.Quad{3, 3, 3, 3, 3, 3, 3, 3}); a != 0 {
		t.Errorf("area of a point = %v; want 0", a)
	}
}

func TestTimeoutOf(t *testing.T) {
	if d, err := timeoutOf(0, DefaultTimeout); err != nil || d != DefaultTimeout {
		t.Errorf("timeoutOf(0) = %v, %v", d, err)
	}
	for _, ms := range []int{-1, int(MaxTimeout.Milliseconds()) + 1} {
		if _, err := timeoutOf(ms, DefaultTimeout); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("timeoutOf(%d) = %v; want ErrInvalid", ms, err)
		}
	}
}
