package tools_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/agent/tools"
	"github.com/corral-sh/corral/internal/testenv"
)

// needs makes the test unavailable without the host programs it drives.
func needs(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			testenv.Unavailable(t, "%s is not installed (scripts/deps.sh installs it)", p)
		}
	}
}

func extraSet(t *testing.T) (*tools.Set, string) {
	t.Helper()
	e, ws := env(t)
	s, b, err := tools.ForSandbox(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return s, ws
}

func TestLSPToolFindsAPlantedError(t *testing.T) {
	needs(t, "gopls", "go")
	s, ws := extraSet(t)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc helper() int { return 1 }\n\nfunc main() {\n\tvar x int = \"not a number\"\n\t_ = x + helper()\n}\n"), 0o644)
	res := run(t, s, "lsp", map[string]any{"action": "diagnostics", "path": "main.go"})
	if res.IsError || !strings.Contains(res.Output, "main.go:6:") {
		t.Fatalf("diagnostics: %+v", res)
	}
	res = run(t, s, "lsp", map[string]any{"action": "definition", "path": "main.go", "line": 7, "character": 10})
	if res.IsError || !strings.Contains(res.Output, "main.go:3:") {
		t.Fatalf("definition: %+v", res)
	}
	res = run(t, s, "lsp", map[string]any{"action": "symbols", "path": "main.go"})
	if !strings.Contains(res.Output, "helper") || !strings.Contains(res.Output, "main") {
		t.Fatalf("symbols: %+v", res)
	}
	if res := run(t, s, "lsp", map[string]any{"action": "hover", "path": "README"}); !res.IsError {
		t.Fatalf("no server for README: %+v", res)
	}
}

func TestBrowserTool(t *testing.T) {
	needs(t, "chromium")
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><title>Counter</title></head><body>
<p id="out">clicked 0 times</p><button id="b" onclick="document.getElementById('out').textContent='clicked '+(++window.n)+' times'">Add one</button>
<script>window.n=0</script></body></html>`)
	}))
	defer page.Close()
	s, _ := extraSet(t)
	if _, ok := s.Get("browser"); !ok {
		t.Fatal("the browser tool is not offered although chromium is installed")
	}
	res := run(t, s, "browser", map[string]any{"action": "navigate", "url": page.URL})
	if res.IsError || !strings.Contains(res.Output, "Counter") {
		t.Fatalf("navigate: %+v", res)
	}
	if res := run(t, s, "browser", map[string]any{"action": "click", "selector": "#b"}); res.IsError {
		t.Fatalf("click: %+v", res)
	}
	res = run(t, s, "browser", map[string]any{"action": "ax"})
	if !strings.Contains(res.Output, `"Add one"`) || !strings.Contains(res.Output, "node_id=") {
		t.Fatalf("ax: %s", res.Output)
	}
	res = run(t, s, "browser", map[string]any{"action": "text"})
	if !strings.Contains(res.Output, "clicked 1 times") {
		t.Fatalf("text after click: %+v", res)
	}
	res = run(t, s, "browser", map[string]any{"action": "eval", "expression": "window.n * 10"})
	if !strings.Contains(res.Output, "10") {
		t.Fatalf("eval: %+v", res)
	}
	res = run(t, s, "browser", map[string]any{"action": "screenshot"})
	if len(res.Images) != 1 {
		t.Fatalf("screenshot: %+v", res)
	}
	if _, err := png.Decode(bytes.NewReader(res.Images[0].Data)); err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if res := run(t, s, "browser", map[string]any{"action": "click", "selector": "#nope"}); !res.IsError {
		t.Fatalf("missing selector: %+v", res)
	}
}

func TestComputerTool(t *testing.T) {
	needs(t, "Xvfb", "xdotool")
	s, _ := extraSet(t)
	if _, ok := s.Get("computer"); !ok {
		t.Fatal("the computer tool is not offered although Xvfb is installed")
	}
	res := run(t, s, "computer", map[string]any{"action": "mouse_move", "coordinate": []int{100, 120}})
	if res.IsError || !strings.Contains(res.Output, "(100, 120)") || !strings.Contains(res.Output, "DISPLAY=") || len(res.Images) != 1 {
		t.Fatalf("mouse_move: %+v", res.Output)
	}
	img, err := png.Decode(bytes.NewReader(res.Images[0].Data))
	if err != nil || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
		t.Fatalf("screenshot: %v %v", err, img.Bounds())
	}
	if res := run(t, s, "computer", map[string]any{"action": "left_click", "coordinate": []int{99999, 1}}); !res.IsError {
		t.Fatalf("off-screen click: %+v", res.Output)
	}
	if res := run(t, s, "computer", map[string]any{"action": "cursor_position"}); res.IsError || len(res.Images) != 0 {
		t.Fatalf("cursor_position: %+v", res)
	}
}
