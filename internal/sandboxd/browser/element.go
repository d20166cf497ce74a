package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

const (
	// DefaultFindTimeout is how long click and type wait for a selector
	// to match, unless the request says otherwise.
	DefaultFindTimeout = 5 * time.Second
	// maxSelector bounds a CSS selector.
	maxSelector = 4096
	// objectGroup holds the page objects the package makes; released
	// after each use.
	objectGroup = "corral"
)

// waitSelectorJS resolves with the first element matching a selector,
// watching the DOM for it (no polling), or with null after ms. A selector
// that does not parse rejects with the browser's SyntaxError.
const waitSelectorJS = `(sel, ms) => new Promise((resolve, reject) => {
	const find = () => document.querySelector(sel);
	let el;
	try { el = find(); } catch (e) { reject(e); return; }
	if (el) { resolve(el); return; }
	const done = (v) => { obs.disconnect(); clearTimeout(timer); resolve(v); };
	const obs = new MutationObserver(() => { const e = find(); if (e) done(e); });
	const timer = setTimeout(() => done(null), ms);
	obs.observe(document, {childList: true, subtree: true, attributes: true});
})`

// waitSelector waits up to d for sel to match, and reports whether it did.
func (t *Tab) waitSelector(ctx context.Context, sel string, d time.Duration) (bool, error) {
	obj, err := t.querySelector(ctx, sel, d)
	if obj != "" {
		t.release(ctx)
	}
	return obj != "", err
}

// querySelector waits up to d for sel to match and returns the element's
// object id ("" when nothing matched). The caller releases objectGroup.
func (t *Tab) querySelector(ctx context.Context, sel string, d time.Duration) (runtime.RemoteObjectID, error) {
	switch {
	case strings.TrimSpace(sel) == "":
		return "", errdefs.Invalidf("selector is empty")
	case len(sel) > maxSelector:
		return "", errdefs.Invalidf("selector is longer than %d bytes", maxSelector)
	}
	arg, _ := json.Marshal(sel)
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:   fmt.Sprintf("(%s)(%s, %d)", waitSelectorJS, arg, d.Milliseconds()),
		ObjectGroup:  objectGroup,
		AwaitPromise: new(true),
		Silent:       new(true),
	})
	if err != nil {
		return "", err
	}
	if ex := res.ExceptionDetails; ex != nil {
		text := exceptionText(ex)
		if strings.Contains(text, "SyntaxError") || strings.Contains(text, "not a valid selector") {
			return "", errdefs.Invalidf("selector %s is not valid CSS", quote(sel))
		}
		return "", errdefs.Unprocessablef("looking up %s: %s", quote(sel), text)
	}
	if res.Result == nil || res.Result.Subtype == runtime.RemoteObjectSubtypeNull {
		return "", nil
	}
	return res.Result.ObjectID, nil
}

// release frees the objects querySelector made.
func (t *Tab) release(ctx context.Context) {
	_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
}

// element finds the DOM node a click or type request names: by selector
// (waited for up to d) or by backend node id. what names the request.
func (t *Tab) element(ctx context.Context, sel string, nodeID int64, d time.Duration) (cdp.BackendNodeID, error) {
	switch {
	case sel != "" && nodeID != 0:
		return 0, errdefs.Invalidf("give selector or node_id, not both")
	case sel == "" && nodeID == 0:
		return 0, errdefs.Invalidf("selector or node_id is required")
	case nodeID < 0:
		return 0, errdefs.Invalidf("node_id must be positive")
	case nodeID > 0:
		return cdp.BackendNodeID(nodeID), nil
	}
	obj, err := t.querySelector(ctx, sel, d)
	if err != nil || obj == "" {
		if err == nil {
			err = errdefs.NotFoundf("no element matches %s (waited %s)", quote(sel), d)
		}
		return 0, err
	}
	defer t.release(ctx)
	res, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj})
	if err != nil {
		return 0, err
	}
	return res.Node.BackendNodeID, nil
}

// Click clicks the element req names with the left mouse button, at the
// centre of its first box, after scrolling it into view.
func (t *Tab) Click(ctx context.Context, req sandboxapi.ClickRequest) error {
	find, err := timeoutOf(req.TimeoutMS, DefaultFindTimeout)
	if err != nil {
		return err
	}
	octx, done := t.op(ctx, find+DefaultTimeout)
	defer done()
	t.activate(octx)
	id, err := t.element(octx, req.Selector, req.NodeID, find)
	if err != nil {
		return t.fail(ctx, octx, err, "click")
	}
	x, y, err := t.target(octx, id, find)
	if err != nil {
		return t.fail(ctx, octx, err, "click")
	}
	for _, ev := range []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	} {
		if _, err := chromedp.Call(octx, input.DispatchMouseEvent, ev); err != nil {
			return t.fail(ctx, octx, err, "click")
		}
	}
	return nil
}

// hitTestJS reports whether a click at the point (x, y) of the viewport
// would reach the element (or something inside it): the page is shown (a
// browser on a display drops input to a page not yet visible, such as a
// window the window manager is still mapping) and the element is the one
// at that point.
const hitTestJS = `function(x, y) {
	if (document.visibilityState !== "visible") return false;
	const e = document.elementFromPoint(x, y);
	return !!e && (e === this || this.contains(e));
}`

// target is where to click node id: its centre, once a click there
// would reach it. A page still laying out (a window the window manager
// is resizing, content loading above) moves elements, so the centre is
// taken again until it is the same in two samples in a row and the
// element is under it, for up to d; after that the last centre is used as
// it is.
func (t *Tab) target(ctx context.Context, id cdp.BackendNodeID, d time.Duration) (x, y float64, err error) {
	deadline := time.Now().Add(d)
	px, py := -1.0, -1.0
	for {
		if x, y, err = t.center(ctx, id); err != nil {
			return 0, 0, err
		}
		stable := x == px && y == py
		if (stable && t.hits(ctx, id, x, y)) || time.Now().After(deadline) {
			return x, y, nil
		}
		px, py = x, y
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond): // about a frame
		}
	}
}

// hits reports whether a click at (x, y) reaches node id; true when it
// cannot tell.
func (t *Tab) hits(ctx context.Context, id cdp.BackendNodeID, x, y float64) bool {
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil || obj.Object == nil {
		return true
	}
	defer t.release(ctx)
	ax, _ := json.Marshal(x)
	ay, _ := json.Marshal(y)
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: hitTestJS, ObjectID: obj.Object.ObjectID, ReturnByValue: new(true),
		Arguments: []*runtime.CallArgument{{Value: ax}, {Value: ay}},
	})
	if err != nil || res.Result == nil {
		return true
	}
	return string(res.Result.Value) != "false"
}

// center scrolls node id into view and returns the centre of its first
// box with an area, in viewport coordinates.
func (t *Tab) center(ctx context.Context, id cdp.BackendNodeID) (x, y float64, err error) {
	if _, err := chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id}); err != nil {
		// A node without its own box (a text node) cannot scroll; the
		// quads below still place it, or fail with the reason.
		if isNotFound(err) {
			return 0, 0, err
		}
	}
	res, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
	if err != nil {
		return 0, 0, err
	}
	for _, q := range res.Quads {
		if len(q) != 8 {
			continue
		}
		if area(q) < 1 {
			continue
		}
		return (q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4, nil
	}
	return 0, 0, errdefs.Unprocessablef("the element has no visible box to click")
}

// area is the area of quad q (shoelace formula).
func area(q dom.Quad) float64 {
	a := 0.0
	for i := 0; i < 4; i++ {
		j := (i + 1) % 4
		a += q[2*i]*q[2*j+1] - q[2*j]*q[2*i+1]
	}
	if a < 0 {
		a = -a
	}
	return a / 2
}

func isNotFound(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No node with given id") || strings.Contains(s, "No node found") || strings.Contains(s, "Could not find node")
}

// selectContentsJS selects the whole content of an input, a textarea or
// an editable element, so that the text inserted next replaces it.
const selectContentsJS = `function() {
	if (typeof this.select === 'function') { this.select(); return; }
	const r = document.createRange(); r.selectNodeContents(this);
	const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
}`

// Type focuses the element req names, clears it if asked, inserts the
// text (as an IME would: one input event, not one per key) and presses
// Enter if asked.
func (t *Tab) Type(ctx context.Context, req sandboxapi.TypeRequest) error {
	find, err := timeoutOf(req.TimeoutMS, DefaultFindTimeout)
	if err != nil {
		return err
	}
	octx, done := t.op(ctx, find+DefaultTimeout)
	defer done()
	t.activate(octx)
	id, err := t.element(octx, req.Selector, req.NodeID, find)
	if err != nil {
		return t.fail(ctx, octx, err, "type")
	}
	if _, err := chromedp.Call(octx, dom.Focus, dom.FocusParams{BackendNodeID: id}); err != nil {
		return t.fail(ctx, octx, err, "type")
	}
	if req.Clear {
		if err := t.selectContents(octx, id); err != nil {
			return t.fail(ctx, octx, err, "type")
		}
		if req.Text == "" {
			if err := t.key(octx, "Backspace", "Backspace", 8, ""); err != nil {
				return t.fail(ctx, octx, err, "type")
			}
		}
	}
	if req.Text != "" {
		if _, err := chromedp.Call(octx, input.InsertText, input.InsertTextParams{Text: req.Text}); err != nil {
			return t.fail(ctx, octx, err, "type")
		}
	}
	if req.Submit {
		if err := t.key(octx, "Enter", "Enter", 13, "\r"); err != nil {
			return t.fail(ctx, octx, err, "type")
		}
	}
	return nil
}

func (t *Tab) selectContents(ctx context.Context, id cdp.BackendNodeID) error {
	res, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil {
		return err
	}
	defer t.release(ctx)
	_, err = chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: selectContentsJS,
		ObjectID:            res.Object.ObjectID,
	})
	return err
}

// key presses and releases one key on the focused element.
func (t *Tab) key(ctx context.Context, key, code string, vk int64, text string) error {
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
	if text != "" {
		down.Type, down.Text, down.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, text, text
	}
	up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
	for _, ev := range []input.DispatchKeyEventParams{down, up} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, ev); err != nil {
			return err
		}
	}
	return nil
}

// exceptionText is the text of a JavaScript exception: its description
// (class, message and stack) when there is one, bounded.
func exceptionText(ex *runtime.ExceptionDetails) string {
	text := ex.Text
	if ex.Exception != nil && ex.Exception.Description != "" {
		text = ex.Exception.Description
	} else if ex.Exception != nil && len(ex.Exception.Value) > 0 {
		text = ex.Text + " " + string(ex.Exception.Value)
	}
	if len(text) > 4096 {
		text = text[:4096] + "…"
	}
	return text
}
