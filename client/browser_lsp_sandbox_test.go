package client_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/testenv"
)

// sitePage is served from inside the sandbox: a button that changes a
// heading.
const sitePage = `<!doctype html><html><head><title>In the sandbox</title></head><body>
<h1 id="state">idle</h1>
<button id="b" onclick="document.getElementById('state').textContent = 'pressed ' + (++window.count || (window.count = 1))">Press</button>
</body></html>`

// TestBrowserAndLSPInSandbox drives the browser and the language servers
// of a real sandbox made from the desktop template (bwrap, sandboxd as
// its init), through a real control plane's proxy: Chromium loads a page
// that a server inside the sandbox serves, a click (by selector, then by
// accessibility node) changes its text; then the same with the browser
// in a window on the desktop's display; gopls reports a planted compile
// error on the right line; pylsp an undefined name. The template is
// built on first use (minutes; cached in /var/cache/corral/templates).
func TestBrowserAndLSPInSandbox(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{Template: "desktop"})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, 5*time.Minute)
	sb, err := cp.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.DeleteSandbox(context.Background(), sb.ID) })
	c := cp.Sandbox(sb.ID)

	t.Run("browser", func(t *testing.T) {
		if _, err := c.WriteFile(ctx, "/workspace/site/index.html", strings.NewReader(sitePage), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "python3",
			Args: []string{"-m", "http.server", "8765", "--bind", "127.0.0.1", "--directory", "/workspace/site"}, Tag: "site"}); err != nil {
			t.Fatal(err)
		}
		waitPort(ctx, t, c, 8765)

		b, err := c.Browser(ctx)
		if err != nil || b.Running || b.Executable == "" {
			t.Fatalf("Browser() = %+v, %v; want chromium found, not running", b, err)
		}
		tab, err := c.OpenTab(ctx, sandboxapi.TabRequest{URL: "http://127.0.0.1:8765/"})
		if err != nil || tab.Title != "In the sandbox" || tab.Status != 200 {
			t.Fatalf("OpenTab = %+v, %v; want the page served in the sandbox", tab, err)
		}
		if _, err := c.TabClick(ctx, tab.ID, sandboxapi.ClickRequest{Selector: "#b"}); err != nil {
			t.Fatal(err)
		}
		if text, err := c.TabText(ctx, tab.ID, 0); err != nil || !strings.Contains(text.Text, "pressed 1") {
			t.Errorf("TabText after the click = %+v, %v; want pressed 1", text, err)
		}
		clickByAX(ctx, t, c, tab.ID, "Press")
		if text, err := c.TabText(ctx, tab.ID, 0); err != nil || !strings.Contains(text.Text, "pressed 2") {
			t.Errorf("TabText after the AX click = %+v, %v; want pressed 2", text, err)
		}
		shot, err := c.TabScreenshot(ctx, tab.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
			t.Errorf("screenshot: %v", err)
		}
		if err := c.StopBrowser(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTab(ctx, tab.ID); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("GetTab after StopBrowser = %v; want ErrNotFound", err)
		}
	})

	t.Run("browser on the desktop", func(t *testing.T) {
		st, err := c.StartDesktop(ctx, sandboxapi.DesktopStartRequest{Width: 1024, Height: 768})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.StopDesktop(context.Background()) })
		b, err := c.StartBrowser(ctx, sandboxapi.BrowserStartRequest{})
		if err != nil || b.Headless || b.Display != st.Display {
			t.Fatalf("StartBrowser with the desktop up = %+v, %v; want a window on %s", b, err, st.Display)
		}
		tab, err := c.OpenTab(ctx, sandboxapi.TabRequest{URL: "http://127.0.0.1:8765/"})
		if err != nil {
			t.Fatal(err)
		}
		clickByAX(ctx, t, c, tab.ID, "Press")
		if text, err := c.TabText(ctx, tab.ID, 0); err != nil || !strings.Contains(text.Text, "pressed 1") {
			t.Errorf("TabText on the desktop = %+v, %v; want pressed 1", text, err)
		}
		if err := c.StopBrowser(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("gopls", func(t *testing.T) {
		// Line 7 (6 from 0) has the error. The template's Go is Debian's.
		src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n\tvar n int = \"not a number\"\n\t_ = n\n}\n"
		for p, content := range map[string]string{"/workspace/proj/go.mod": "module example.com/proj\n\ngo 1.19\n", "/workspace/proj/main.go": src} {
			if _, err := c.WriteFile(ctx, p, strings.NewReader(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ls, err := c.StartLanguageServer(ctx, sandboxapi.LSPStartRequest{Language: "go", Root: "/workspace/proj"})
		if err != nil {
			t.Fatal(err)
		}
		d := waitDiagnostics(ctx, t, c, ls.ID, "main.go", func(d *sandboxapi.LSPDiagnostics) bool { return len(d.Diagnostics) > 0 })
		found := false
		for _, dg := range d.Diagnostics {
			found = found || (dg.Severity == "error" && dg.Range.Start.Line == 6)
		}
		if !found {
			t.Errorf("gopls diagnostics = %+v; want an error on line 6 (0-based)", d.Diagnostics)
		}
		if err := c.StopLanguageServer(ctx, ls.ID); err != nil {
			t.Error(err)
		}
	})

	t.Run("pylsp", func(t *testing.T) {
		if res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "python3", Args: []string{"-c", "import pyflakes"}}); err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			testenv.Unavailable(t, "the desktop template has no python3-pyflakes, so pylsp reports no undefined names")
		}
		if _, err := c.WriteFile(ctx, "/workspace/py/app.py", strings.NewReader("def f():\n    return missing_name\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ls, err := c.StartLanguageServer(ctx, sandboxapi.LSPStartRequest{Language: "python", Root: "/workspace/py"})
		if err != nil {
			t.Fatal(err)
		}
		d := waitDiagnostics(ctx, t, c, ls.ID, "app.py", func(d *sandboxapi.LSPDiagnostics) bool { return len(d.Diagnostics) > 0 })
		if len(d.Diagnostics) == 0 || d.Diagnostics[0].Range.Start.Line != 1 || !strings.Contains(d.Diagnostics[0].Message, "missing_name") {
			t.Errorf("pylsp diagnostics = %+v; want missing_name on line 1", d.Diagnostics)
		}
	})
}

// clickByAX clicks the button named name, found in the accessibility tree.
func clickByAX(ctx context.Context, t *testing.T, c *client.Client, tab, name string) {
	t.Helper()
	tree, err := c.TabAXTree(ctx, tab, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tree.Nodes {
		if n.Role == "button" && n.Name == name {
			if _, err := c.TabClick(ctx, tab, sandboxapi.ClickRequest{NodeID: n.NodeID}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no button %q in %+v", name, tree.Nodes)
}

// waitPort waits until something listens on port in the sandbox.
func waitPort(ctx context.Context, t *testing.T, c *client.Client, port int) {
	t.Helper()
	for {
		ports, err := c.Ports(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p.Port == port {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nothing listens on %d: %v", port, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitDiagnostics asks for a document's diagnostics until ok accepts
// them: a server that publishes (Debian's gopls and pylsp do) may first
// publish before it has loaded the workspace.
func waitDiagnostics(ctx context.Context, t *testing.T, c *client.Client, id, path string, ok func(*sandboxapi.LSPDiagnostics) bool) *sandboxapi.LSPDiagnostics {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		d, err := c.LSPDiagnostics(ctx, id, sandboxapi.LSPDiagnosticsRequest{Path: path, TimeoutMS: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if ok(d) {
			return d
		}
		select {
		case <-ctx.Done():
			t.Fatalf("diagnostics of %s never satisfied the test; last %+v", path, d)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
