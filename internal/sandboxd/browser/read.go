package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// DefaultTextBytes and MaxTextBytes bound the page text returned.
	DefaultTextBytes = 1 << 20
	MaxTextBytes     = 16 << 20
	// DefaultAXNodes and MaxAXNodes bound the accessibility nodes returned.
	DefaultAXNodes = 5000
	MaxAXNodes     = 100000
	// MaxEvalResult bounds the JSON of an eval result.
	MaxEvalResult = 8 << 20
	// maxShot bounds each side of a full-page screenshot, in CSS pixels.
	maxShot = 16384
)

// pageTextJS returns the page's URL, title and rendered text, the text cut
// at max UTF-16 units in the page so a huge page never crosses the wire.
const pageTextJS = `((max) => {
	const b = document.body || document.documentElement;
	const t = b ? b.innerText : '';
	return {url: location.href, title: document.title, text: t.length > max ? t.slice(0, max) : t, more: t.length > max};
})(%d)`

// Text returns the page's rendered text, at most maxBytes of it.
func (t *Tab) Text(ctx context.Context, maxBytes int) (sandboxapi.PageText, error) {
	if maxBytes <= 0 || maxBytes > MaxTextBytes {
		return sandboxapi.PageText{}, errdefs.Invalidf("max_bytes must be between 1 and %d", MaxTextBytes)
	}
	octx, done := t.op(ctx, DefaultTimeout)
	defer done()
	var out struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Text  string `json:"text"`
		More  bool   `json:"more"`
	}
	if err := t.evalJSON(octx, fmt.Sprintf(pageTextJS, maxBytes), &out); err != nil {
		return sandboxapi.PageText{}, t.fail(ctx, octx, err, "reading the text")
	}
	text, cut := truncateUTF8(out.Text, maxBytes)
	return sandboxapi.PageText{URL: out.URL, Title: out.Title, Text: text, Truncated: out.More || cut}, nil
}

// evalJSON evaluates an expression of the package's own and decodes its
// value into v.
func (t *Tab) evalJSON(ctx context.Context, expr string, v any) error {
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ReturnByValue: new(true), Silent: new(true),
	})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return errdefs.Unprocessablef("the page refused the script: %s", exceptionText(res.ExceptionDetails))
	}
	return json.Unmarshal(res.Result.Value, v)
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// AX returns the page's accessibility tree, flattened (see
// sandboxapi.AXTree), at most maxNodes nodes.
func (t *Tab) AX(ctx context.Context, maxNodes int) (sandboxapi.AXTree, error) {
	if maxNodes <= 0 || maxNodes > MaxAXNodes {
		return sandboxapi.AXTree{}, errdefs.Invalidf("max_nodes must be between 1 and %d", MaxAXNodes)
	}
	octx, done := t.op(ctx, DefaultTimeout)
	defer done()
	res, err := chromedp.Call(octx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return sandboxapi.AXTree{}, t.fail(ctx, octx, err, "reading the accessibility tree")
	}
	tree := flattenAX(res.Nodes, maxNodes)
	var meta struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	}
	if err := t.evalJSON(octx, `({url: location.href, title: document.title})`, &meta); err != nil {
		return sandboxapi.AXTree{}, t.fail(ctx, octx, err, "reading the accessibility tree")
	}
	tree.URL, tree.Title = meta.URL, meta.Title
	return tree, nil
}

// skippedRoles are containers and fragments left out of the flattened
// tree unless they have a name; their children move up.
var skippedRoles = map[string]bool{"none": true, "generic": true, "presentation": true, "InlineTextBox": true, "LineBreak": true}

// axProps are the properties an AXNode reports when set.
var axProps = map[accessibility.PropertyName]bool{
	"focused": true, "disabled": true, "checked": true, "pressed": true, "selected": true,
	"expanded": true, "required": true, "readonly": true, "invalid": true, "level": true,
	"modal": true, "multiselectable": true, "url": true,
}

// flattenAX walks the tree from its root in document order.
func flattenAX(nodes []*accessibility.Node, max int) sandboxapi.AXTree {
	out := sandboxapi.AXTree{Nodes: []sandboxapi.AXNode{}}
	if len(nodes) == 0 {
		return out
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(nodes))
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	root := nodes[0]
	for _, n := range nodes {
		if n.ParentID == "" {
			root = n
			break
		}
	}
	type item struct {
		n          *accessibility.Node
		depth      int
		parentName string // the nearest reported ancestor's name
	}
	stack := []item{{n: root}}
	seen := map[accessibility.NodeID]bool{}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := it.n
		if seen[n.NodeID] {
			continue // a malformed tree must not loop
		}
		seen[n.NodeID] = true
		role, name, value := axString(n.Role), axString(n.Name), axString(n.Value)
		childDepth, parentName := it.depth, it.parentName
		keep := !n.Ignored && !(skippedRoles[role] && name == "") &&
			!(role == "StaticText" && name == it.parentName) && role != "InlineTextBox"
		if keep {
			if len(out.Nodes) >= max {
				out.Truncated = true
				break
			}
			node := sandboxapi.AXNode{NodeID: int64(n.BackendDOMNodeID), Role: role, Name: name, Value: value, Depth: it.depth}
			for _, p := range n.Properties {
				if !axProps[p.Name] || p.Value == nil {
					continue
				}
				if v := axValue(p.Value); v != nil && v != false && v != "false" && v != "" {
					if node.Props == nil {
						node.Props = map[string]any{}
					}
					node.Props[string(p.Name)] = v
				}
			}
			out.Nodes = append(out.Nodes, node)
			childDepth, parentName = it.depth+1, name
		}
		for i := len(n.ChildIDs) - 1; i >= 0; i-- {
			if c, ok := byID[n.ChildIDs[i]]; ok {
				stack = append(stack, item{n: c, depth: childDepth, parentName: parentName})
			}
		}
	}
	return out
}

// axValue decodes an AX value's JSON.
func axValue(v *accessibility.Value) any {
	if v == nil || len(v.Value) == 0 {
		return nil
	}
	var x any
	if err := json.Unmarshal(v.Value, &x); err != nil {
		return nil
	}
	return x
}

// axString is an AX value as text.
func axString(v *accessibility.Value) string {
	switch x := axValue(v).(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// Eval evaluates req.Expression in the page, as a script (a promise it
// returns is awaited), and returns its value as JSON.
func (t *Tab) Eval(ctx context.Context, req sandboxapi.EvalRequest) (sandboxapi.EvalResult, error) {
	if strings.TrimSpace(req.Expression) == "" {
		return sandboxapi.EvalResult{}, errdefs.Invalidf("expression is required")
	}
	timeout, err := timeoutOf(req.TimeoutMS, DefaultTimeout)
	if err != nil {
		return sandboxapi.EvalResult{}, err
	}
	octx, done := t.op(ctx, timeout+5*time.Second)
	defer done()
	start := time.Now()
	res, err := chromedp.Call(octx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    req.Expression,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
		UserGesture:   new(true),
		Timeout:       runtime.TimeDelta(timeout.Milliseconds()),
	})
	if err != nil {
		var ce *cdproto.Error
		switch {
		case errors.As(err, &ce) && (strings.Contains(ce.Message, "by value") || strings.Contains(ce.Message, "reference chain")):
			return sandboxapi.EvalResult{}, errdefs.Wrap(errdefs.ErrUnprocessable, err, "the result cannot be returned as JSON: "+ce.Message)
		case ce != nil && time.Since(start) >= timeout:
			// V8 terminated the script at the timeout; the browser
			// reports that as an internal error.
			return sandboxapi.EvalResult{}, errdefs.Wrap(errdefs.ErrTimeout, err, fmt.Sprintf("the script ran longer than %s and was stopped", timeout))
		}
		return sandboxapi.EvalResult{}, t.fail(ctx, octx, err, "eval")
	}
	if ex := res.ExceptionDetails; ex != nil {
		text := exceptionText(ex)
		if strings.Contains(text, "Execution was terminated") {
			return sandboxapi.EvalResult{}, errdefs.Wrap(errdefs.ErrTimeout, nil, fmt.Sprintf("the script ran longer than %s and was stopped", timeout))
		}
		return sandboxapi.EvalResult{}, errdefs.Unprocessablef("the script threw: %s", text)
	}
	r := res.Result
	out := sandboxapi.EvalResult{Type: string(r.Type), Value: json.RawMessage("null")}
	switch {
	case r.UnserializableValue != "":
		out.Description = string(r.UnserializableValue)
	case len(r.Value) > MaxEvalResult:
		return sandboxapi.EvalResult{}, errdefs.TooLargef("the result is %d bytes of JSON; the limit is %d", len(r.Value), MaxEvalResult)
	case len(r.Value) > 0:
		out.Value = json.RawMessage(r.Value)
	case r.Type != runtime.RemoteObjectTypeUndefined:
		out.Description = r.Description
	}
	if r.Type == runtime.RemoteObjectTypeFunction {
		out.Value, out.Description = json.RawMessage("null"), r.Description
	}
	return out, nil
}

// Screenshot returns a PNG of the viewport, or of the whole page.
func (t *Tab) Screenshot(ctx context.Context, fullPage bool) ([]byte, error) {
	octx, done := t.op(ctx, DefaultTimeout)
	defer done()
	params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
	if fullPage {
		m, err := chromedp.Call(octx, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return nil, t.fail(ctx, octx, err, "screenshot")
		}
		if s := m.CSSContentSize; s != nil {
			w, h := math.Min(math.Ceil(s.Width), maxShot), math.Min(math.Ceil(s.Height), maxShot)
			if w >= 1 && h >= 1 {
				params.Clip = &page.Viewport{Width: w, Height: h, Scale: 1}
				params.CaptureBeyondViewport = new(true)
			}
		}
	}
	res, err := chromedp.Call(octx, page.CaptureScreenshot, params)
	if err != nil {
		return nil, t.fail(ctx, octx, err, "screenshot")
	}
	return res.Data, nil
}
