package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/llm"
)

// Browser limits.
const (
	browserTextMax = 32 << 10
	browserAXMax   = 400
)

// Browser drives the sandbox's Chromium over CDP (sandboxd
// /v1/browser/*): one tab per run, opened on first use, kept across calls.
type Browser struct {
	env *Env

	mu  sync.Mutex
	tab string
}

// NewBrowser returns the browser tool of env.
func NewBrowser(env *Env) *Browser { return &Browser{env: env} }

// Spec implements Tool.
func (b *Browser) Spec() llm.Tool {
	return llm.Tool{Name: "browser", Description: "Use a web browser inside the sandbox (it reaches servers you start in the sandbox, " +
		"e.g. http://127.0.0.1:3000). Actions: navigate (url; waits for the network to go idle), text (the page as text), " +
		"ax (the accessibility tree: roles, names and node_id values), click (selector or node_id), type (text into selector or " +
		"node_id; submit presses Enter), eval (a JavaScript expression; its JSON value is returned), screenshot.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"action":{"type":"string","enum":["navigate","text","ax","click","type","eval","screenshot"]},
"url":{"type":"string"},
"selector":{"type":"string"},
"node_id":{"type":"integer","minimum":1},
"text":{"type":"string"},
"submit":{"type":"boolean"},
"expression":{"type":"string"}},
"required":["action"],"additionalProperties":false,
"allOf":[
{"if":{"properties":{"action":{"const":"navigate"}}},"then":{"required":["url"]}},
{"if":{"properties":{"action":{"const":"eval"}}},"then":{"required":["expression"]}},
{"if":{"properties":{"action":{"const":"type"}}},"then":{"required":["text"]}}]}`)}
}

// Available reports whether the sandbox has a browser.
func (b *Browser) Available(ctx context.Context) bool {
	_, err := b.env.Sandbox.Browser(ctx)
	return err == nil
}

type browserInput struct {
	Action     string `json:"action"`
	URL        string `json:"url"`
	Selector   string `json:"selector"`
	NodeID     int64  `json:"node_id"`
	Text       string `json:"text"`
	Submit     bool   `json:"submit"`
	Expression string `json:"expression"`
}

// Run implements Tool.
func (b *Browser) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	var in browserInput
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tab == "" {
		if _, err := b.env.Sandbox.StartBrowser(ctx, sandboxapi.BrowserStartRequest{}); err != nil {
			return requestError(err, "starting the browser")
		}
		t, err := b.env.Sandbox.OpenTab(ctx, sandboxapi.TabRequest{URL: in.URL, Wait: sandboxapi.WaitNetworkIdle})
		if err != nil {
			return requestError(err, "opening a tab")
		}
		b.tab = t.ID
		if in.Action == "navigate" {
			return Result{Output: fmt.Sprintf("opened %s (%s)", t.URL, t.Title)}, nil
		}
	}
	cl := b.env.Sandbox
	switch in.Action {
	case "navigate":
		t, err := cl.TabNavigate(ctx, b.tab, sandboxapi.NavigateRequest{URL: in.URL, Wait: sandboxapi.WaitNetworkIdle})
		if err != nil {
			return requestError(err, "navigate")
		}
		return Result{Output: fmt.Sprintf("at %s (%s), status %d", t.URL, t.Title, t.Status)}, nil
	case "text":
		p, err := cl.TabText(ctx, b.tab, browserTextMax)
		if err != nil {
			return requestError(err, "reading the page")
		}
		out := fmt.Sprintf("%s — %s\n\n%s", p.URL, p.Title, p.Text)
		if p.Truncated {
			out += "\n[the page's text goes on]"
		}
		return Result{Output: out}, nil
	case "ax":
		tree, err := cl.TabAXTree(ctx, b.tab, browserAXMax)
		if err != nil {
			return requestError(err, "reading the accessibility tree")
		}
		var s strings.Builder
		fmt.Fprintf(&s, "%s — %s\n", tree.URL, tree.Title)
		for _, n := range tree.Nodes {
			fmt.Fprintf(&s, "%s%s %q", strings.Repeat("  ", n.Depth), n.Role, n.Name)
			if n.Value != "" {
				fmt.Fprintf(&s, " value=%q", n.Value)
			}
			if n.NodeID != 0 {
				fmt.Fprintf(&s, " [node_id=%d]", n.NodeID)
			}
			s.WriteByte('\n')
		}
		if tree.Truncated {
			s.WriteString("[more nodes not shown]\n")
		}
		return Result{Output: s.String()}, nil
	case "click":
		t, err := cl.TabClick(ctx, b.tab, sandboxapi.ClickRequest{Selector: in.Selector, NodeID: in.NodeID})
		if err != nil {
			return requestError(err, "click")
		}
		return Result{Output: fmt.Sprintf("clicked; now at %s (%s)", t.URL, t.Title)}, nil
	case "type":
		t, err := cl.TabType(ctx, b.tab, sandboxapi.TypeRequest{Selector: in.Selector, NodeID: in.NodeID, Text: in.Text, Submit: in.Submit})
		if err != nil {
			return requestError(err, "type")
		}
		return Result{Output: fmt.Sprintf("typed; now at %s (%s)", t.URL, t.Title)}, nil
	case "eval":
		r, err := cl.TabEval(ctx, b.tab, sandboxapi.EvalRequest{Expression: in.Expression})
		if err != nil {
			return requestError(err, "eval")
		}
		out := string(r.Value)
		if out == "" {
			out = r.Description
		}
		return Result{Output: fmt.Sprintf("(%s) %s", r.Type, out)}, nil
	case "screenshot":
		png, err := cl.TabScreenshot(ctx, b.tab, false)
		if err != nil {
			return requestError(err, "screenshot")
		}
		return Result{Output: "screenshot attached", Images: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Data: png}}}, nil
	}
	return Errorf("unknown action %q", in.Action), nil
}
