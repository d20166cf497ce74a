package client_test

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/testenv"
)

// counterPage is a page with a button that changes a heading.
const counterPage = `<!doctype html><title>Counter</title>
<h1 id="out">zero</h1><button onclick="document.getElementById('out').textContent = 'one'">Add</button>
<input aria-label="Note" id="note">`

func TestBrowserSDK(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		testenv.Unavailable(t, "no chromium installed (scripts/deps.sh installs it)")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, counterPage)
	}))
	t.Cleanup(site.Close)
	d := startDaemon(t, true, sandboxd.Config{Token: testToken})
	c := d.c
	ctx := testContext(t, 60*time.Second)

	b, err := c.StartBrowser(ctx, sandboxapi.BrowserStartRequest{})
	if err != nil || !b.Running || !b.Headless {
		t.Fatalf("StartBrowser = %+v, %v; want a headless browser", b, err)
	}
	tab, err := c.OpenTab(ctx, sandboxapi.TabRequest{URL: site.URL, Wait: sandboxapi.WaitNetworkIdle})
	if err != nil || tab.Title != "Counter" {
		t.Fatalf("OpenTab = %+v, %v", tab, err)
	}
	tree, err := c.TabAXTree(ctx, tab.ID, 0)
	if err != nil {
		t.Fatalf("TabAXTree: %v", err)
	}
	var button, note int64
	for _, n := range tree.Nodes {
		switch {
		case n.Role == "button" && n.Name == "Add":
			button = n.NodeID
		case n.Role == "textbox" && n.Name == "Note":
			note = n.NodeID
		}
	}
	if button == 0 || note == 0 {
		t.Fatalf("accessibility tree %+v lacks the button or the text box", tree.Nodes)
	}
	if _, err := c.TabClick(ctx, tab.ID, sandboxapi.ClickRequest{NodeID: button}); err != nil {
		t.Fatalf("TabClick: %v", err)
	}
	if _, err := c.TabType(ctx, tab.ID, sandboxapi.TypeRequest{NodeID: note, Text: "moo"}); err != nil {
		t.Fatalf("TabType: %v", err)
	}
	text, err := c.TabText(ctx, tab.ID, 0)
	if err != nil || !strings.Contains(text.Text, "one") {
		t.Errorf("TabText = %+v, %v; want the heading changed by the click", text, err)
	}
	r, err := c.TabEval(ctx, tab.ID, sandboxapi.EvalRequest{Expression: "document.getElementById('note').value"})
	if err != nil || string(r.Value) != `"moo"` {
		t.Errorf("TabEval = %+v, %v; want \"moo\"", r, err)
	}
	_, err = c.TabEval(ctx, tab.ID, sandboxapi.EvalRequest{Expression: "null.x"})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrUnprocessable) || !errors.As(err, &apiErr) || !strings.Contains(apiErr.Detail, "TypeError") {
		t.Errorf("TabEval of a throwing script = %v; want ErrUnprocessable with the TypeError", err)
	}
	shot, err := c.TabScreenshot(ctx, tab.ID, false)
	if err != nil {
		t.Fatalf("TabScreenshot: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Errorf("screenshot is not a PNG: %v", err)
	}
	if _, err := c.TabNavigate(ctx, tab.ID, sandboxapi.NavigateRequest{URL: "javascript:1"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("TabNavigate to javascript: = %v; want ErrInvalid", err)
	}
	if _, err := c.TabWait(ctx, tab.ID, sandboxapi.WaitRequest{Selector: "#out"}); err != nil {
		t.Errorf("TabWait: %v", err)
	}
	tabs, err := c.Tabs(ctx)
	if err != nil || len(tabs) != 1 || tabs[0].ID != tab.ID {
		t.Errorf("Tabs = %+v, %v; want the one tab", tabs, err)
	}
	if err := c.CloseTab(ctx, tab.ID); err != nil {
		t.Errorf("CloseTab: %v", err)
	}
	if _, err := c.GetTab(ctx, tab.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetTab of a closed tab = %v; want ErrNotFound", err)
	}
	if err := c.StopBrowser(ctx); err != nil {
		t.Errorf("StopBrowser: %v", err)
	}
	if b, err := c.Browser(ctx); err != nil || b.Running {
		t.Errorf("Browser after stop = %+v, %v; want not running", b, err)
	}
}
