package sandboxd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/testenv"
)

// needServer skips (fails in CI) when the language server name is missing
// from $PATH and from ~/go/bin.
func needServer(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, "go", "bin", name)); err == nil {
			return
		}
	}
	testenv.Unavailable(t, "no %s installed (scripts/deps.sh installs it)", name)
}

// goMain is a program with a compile error planted on line 9 (line 8
// counting from 0).
const goMain = `package main

import "fmt"

func hello() string { return "hi" }

func main() {
	fmt.Println(hello())
	var n int = "not a number"
	_ = n
}
`

const goMainFixed = `package main

import "fmt"

func hello() string { return "hi" }

func main() {
	fmt.Println(hello())
}
`

// writeTree writes files (sandbox path → content) under the daemon's root.
func writeTree(t *testing.T, a *api, files map[string]string) {
	t.Helper()
	for p, content := range files {
		host := filepath.Join(a.d.Root, p)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func startLSP(t *testing.T, a *api, lang, root string) sandboxapi.LSPServer {
	t.Helper()
	var s sandboxapi.LSPServer
	must(t, a, "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: lang, Root: root}, 201, &s)
	return s
}

func diagnostics(t *testing.T, a *api, id string, req sandboxapi.LSPDiagnosticsRequest) sandboxapi.LSPDiagnostics {
	t.Helper()
	var d sandboxapi.LSPDiagnostics
	must(t, a, "POST", "/v1/lsp/servers/"+id+"/diagnostics", req, 200, &d)
	return d
}

// errorOnLine reports whether ds has an error on line (0-based) whose
// message contains text.
func errorOnLine(ds []sandboxapi.LSPDiagnostic, line int, text string) bool {
	for _, d := range ds {
		if d.Severity == "error" && d.Range.Start.Line == line && strings.Contains(d.Message, text) {
			return true
		}
	}
	return false
}

func TestLSPGo(t *testing.T) {
	needServer(t, "gopls")
	a := newAPI(t)
	writeTree(t, a, map[string]string{
		"/proj/go.mod":  "module example.com/proj\n\ngo 1.22\n",
		"/proj/main.go": goMain,
		"/proj/use.go":  "package main\n\nvar _ = helper()\n",
	})
	srv := startLSP(t, a, "go", "/proj")
	if srv.Status != "running" || srv.Name != "gopls" || srv.Root != "/proj" || !strings.HasSuffix(srv.Command[0], "gopls") || srv.PID == 0 {
		t.Fatalf("started %+v; want gopls running over /proj", srv)
	}
	sp := "/v1/lsp/servers/" + srv.ID

	t.Run("planted compile error", func(t *testing.T) {
		d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "main.go"})
		if !d.Complete || d.Path != "/proj/main.go" || d.Version != 1 || !strings.HasPrefix(d.URI, "file://") {
			t.Errorf("diagnostics = %+v; want complete, version 1 of /proj/main.go", d)
		}
		if !errorOnLine(d.Diagnostics, 8, "cannot use") {
			t.Errorf("diagnostics = %+v; want an error on line 8 (0-based) about the assignment", d.Diagnostics)
		}
	})

	t.Run("fixed text is clean", func(t *testing.T) {
		fixed := goMainFixed
		d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "/proj/main.go", Text: &fixed})
		if !d.Complete || d.Version != 2 || len(d.Diagnostics) != 0 {
			t.Errorf("diagnostics of the fixed text = %+v; want complete, version 2, none", d)
		}
		// Back to the file on disk: the error again, in a new version.
		d = diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "/proj/main.go"})
		if !d.Complete || d.Version != 3 || !errorOnLine(d.Diagnostics, 8, "cannot use") {
			t.Errorf("diagnostics of the file again = %+v; want version 3 with the error", d)
		}
		// Unchanged content answers with the same version.
		d = diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "main.go"})
		if !d.Complete || d.Version != 3 || !errorOnLine(d.Diagnostics, 8, "cannot use") {
			t.Errorf("diagnostics unchanged = %+v; want version 3 with the error", d)
		}
	})

	t.Run("analyzers come with the first answer", func(t *testing.T) {
		// In a package of its own: gopls runs no analyzer on a package
		// with type errors, and main has one.
		vet := "package vet\n\nimport \"fmt\"\n\nfunc VetMe() {\n\tfmt.Printf(\"%d\\n\", \"not a number\")\n}\n"
		writeTree(t, a, map[string]string{"/proj/vet/vet.go": "package vet\n"})
		d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "vet/vet.go", Text: &vet})
		found := false
		for _, dg := range d.Diagnostics {
			found = found || (dg.Source == "printf" && dg.Range.Start.Line == 5)
		}
		if !d.Complete || !found {
			t.Errorf("diagnostics = %+v; want printf's finding on line 5", d)
		}
	})

	t.Run("definition references hover symbols", func(t *testing.T) {
		var defs sandboxapi.LSPLocations
		must(t, a, "POST", sp+"/definition", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 7, Character: 14}, 200, &defs)
		if len(defs.Locations) != 1 || defs.Locations[0].Path != "/proj/main.go" || defs.Locations[0].Range.Start.Line != 4 {
			t.Errorf("definition of hello = %+v; want /proj/main.go line 4", defs.Locations)
		}
		var std sandboxapi.LSPLocations
		must(t, a, "POST", sp+"/definition", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 7, Character: 6}, 200, &std)
		if len(std.Locations) != 1 || std.Locations[0].Path != "" || !strings.HasSuffix(std.Locations[0].URI, "/fmt/print.go") {
			t.Errorf("definition of fmt.Println = %+v; want the standard library, outside the root (no path)", std.Locations)
		}
		var refs sandboxapi.LSPLocations
		must(t, a, "POST", sp+"/references", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 4, Character: 6, IncludeDeclaration: true}, 200, &refs)
		if len(refs.Locations) != 2 {
			t.Errorf("references of hello = %+v; want the declaration and the call", refs.Locations)
		}
		var h sandboxapi.LSPHover
		must(t, a, "POST", sp+"/hover", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 7, Character: 6}, 200, &h)
		if !strings.Contains(h.Contents, "func fmt.Println") || h.Kind != "markdown" || h.Range == nil {
			t.Errorf("hover on Println = %+v; want its signature in markdown", h)
		}
		must(t, a, "POST", sp+"/hover", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 1, Character: 0}, 200, &h)
		if h.Contents != "" {
			t.Errorf("hover on a blank line = %+v; want nothing", h)
		}
		var syms sandboxapi.LSPSymbols
		must(t, a, "POST", sp+"/symbols", sandboxapi.LSPPositionRequest{Path: "main.go"}, 200, &syms)
		var names []string
		for _, s := range syms.Symbols {
			names = append(names, s.Kind+" "+s.Name)
		}
		if strings.Join(names, ",") != "function hello,function main" {
			t.Errorf("symbols = %v; want function hello, function main", names)
		}
	})

	t.Run("files changed on disk reach the server", func(t *testing.T) {
		d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "use.go"})
		if !errorOnLine(d.Diagnostics, 2, "helper") {
			t.Fatalf("diagnostics of use.go = %+v; want helper undefined on line 2", d)
		}
		// A new file, never opened, defines it: the watch tells gopls.
		writeTree(t, a, map[string]string{"/proj/helper.go": "package main\n\nfunc helper() int { return 1 }\n"})
		waitUntil(t, "gopls sees helper.go", func() bool {
			d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "use.go", TimeoutMS: 2000})
			return d.Complete && len(d.Diagnostics) == 0
		})
	})

	t.Run("concurrent documents", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// File i has its error on line 2+i.
				text := "package main\n\n" + strings.Repeat("\n", i) + fmt.Sprintf("var bad%d int = \"x\"\n", i)
				code, body, err := bcall(a, "POST", sp+"/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: fmt.Sprintf("c%d.go", i), Text: &text})
				var d sandboxapi.LSPDiagnostics
				_ = json.Unmarshal(body, &d)
				if err != nil || code != 200 || !errorOnLine(d.Diagnostics, 2+i, "cannot use") {
					errs <- fmt.Errorf("file %d: %d %v %s; want an error on line %d", i, code, err, body, 2+i)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("listed, stopped", func(t *testing.T) {
		var list sandboxapi.LSPServerList
		must(t, a, "GET", "/v1/lsp/servers", nil, 200, &list)
		if len(list.Servers) != 1 || list.Servers[0].ID != srv.ID {
			t.Fatalf("servers = %+v; want %s", list.Servers, srv.ID)
		}
		must(t, a, "DELETE", sp, nil, 204, nil)
		if err := syscall.Kill(srv.PID, 0); err == nil {
			t.Errorf("gopls %d is alive after DELETE", srv.PID)
		}
		resp, body := a.do("GET", sp, nil)
		wantStatus(t, "server after DELETE", resp.StatusCode, body, 404)
	})
}

func TestLSPHostile(t *testing.T) {
	needServer(t, "gopls")
	a := newAPI(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.go"), []byte("package secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, a, map[string]string{
		"/proj/go.mod":  "module example.com/proj\n\ngo 1.22\n",
		"/proj/main.go": goMainFixed,
		"/afile":        "x",
	})
	for link, target := range map[string]string{"/proj/evil.go": filepath.Join(outside, "secret.go"), "/proj/out": outside, "/outlink": outside} {
		if err := os.Symlink(target, filepath.Join(a.d.Root, link)); err != nil {
			t.Fatal(err)
		}
	}
	srv := startLSP(t, a, "go", "/proj")
	sp := "/v1/lsp/servers/" + srv.ID
	text := "package main\n"
	huge := `{"path":"main.go","text":"` + strings.Repeat("x", 40<<20) + `"}`
	for _, c := range []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"unknown language", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "cobol", Root: "/proj"}, 400},
		{"no root", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go"}, 400},
		{"relative root", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "proj"}, 400},
		{"missing root", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "/nope"}, 404},
		{"root above the root", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "/../../etc"}, 403},
		{"root through a symlink out", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "/outlink"}, 403},
		{"root is a file", "POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "/afile"}, 400},
		{"unknown field", "POST", "/v1/lsp/servers", `{"language":"go","root":"/proj","x":1}`, 400},
		{"unknown server", "POST", "/v1/lsp/servers/ls_nope/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "main.go"}, 404},
		{"unknown server get", "GET", "/v1/lsp/servers/ls_nope", nil, 404},
		{"unknown server delete", "DELETE", "/v1/lsp/servers/ls_nope", nil, 404},
		{"unknown server hover", "POST", "/v1/lsp/servers/ls_nope/hover", sandboxapi.LSPPositionRequest{Path: "main.go"}, 404},
		{"dot-dot out of the root", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "../../../etc/passwd"}, 403},
		{"absolute dot-dot", "POST", sp + "/definition", sandboxapi.LSPPositionRequest{Path: "/../etc/passwd"}, 403},
		{"symlink out", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "evil.go"}, 403},
		{"symlink out with text", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "evil.go", Text: &text}, 403},
		{"directory symlink out", "POST", sp + "/symbols", sandboxapi.LSPPositionRequest{Path: "out/secret.go"}, 403},
		{"new file through a symlink out", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "out/new.go", Text: &text}, 403},
		{"missing document", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "nope.go"}, 404},
		{"directory as document", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "/proj"}, 400},
		{"no path", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{}, 400},
		{"line past the end", "POST", sp + "/hover", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 500}, 400},
		{"negative character", "POST", sp + "/definition", sandboxapi.LSPPositionRequest{Path: "main.go", Line: 1, Character: -1}, 400},
		{"negative timeout", "POST", sp + "/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "main.go", TimeoutMS: -5}, 400},
		{"malformed JSON", "POST", sp + "/references", `{"path":`, 400},
		{"huge body", "POST", sp + "/diagnostics", huge, 413},
	} {
		resp, body := a.do(c.method, c.path, c.body)
		wantStatus(t, c.name, resp.StatusCode, body, c.want)
		if strings.Contains(string(body), outside) || strings.Contains(string(body), a.d.Root) {
			t.Errorf("%s: the answer %s names a host path", c.name, body)
		}
	}

	t.Run("killed server", func(t *testing.T) {
		if err := syscall.Kill(srv.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the server is listed as exited", func() bool {
			var s sandboxapi.LSPServer
			must(t, a, "GET", sp, nil, 200, &s)
			return s.Status == "exited"
		})
		resp, body := a.do("POST", sp+"/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "main.go"})
		wantStatus(t, "diagnostics of a killed server", resp.StatusCode, body, 409)
		must(t, a, "DELETE", sp, nil, 204, nil)
	})
}

func TestLSPPython(t *testing.T) {
	needServer(t, "pylsp")
	a := newAPI(t)
	writeTree(t, a, map[string]string{"/py/app.py": "import os\n\n\ndef f(x):\n    return undefined_name + x\n"})
	srv := startLSP(t, a, "python", "/py")
	if srv.Name != "pylsp" && srv.Name != "pyright" {
		t.Errorf("python server %+v; want pylsp or pyright", srv)
	}
	d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "app.py"})
	if !d.Complete || !errorOnLine(d.Diagnostics, 4, "undefined_name") {
		t.Errorf("diagnostics = %+v; want undefined_name on line 4 (0-based)", d)
	}
	var syms sandboxapi.LSPSymbols
	must(t, a, "POST", "/v1/lsp/servers/"+srv.ID+"/symbols", sandboxapi.LSPPositionRequest{Path: "app.py"}, 200, &syms)
	found := false
	for _, s := range syms.Symbols {
		found = found || (s.Name == "f" && s.Kind == "function")
	}
	if !found {
		t.Errorf("symbols = %+v; want function f", syms.Symbols)
	}
}

// TestLSPTypeScript checks the TypeScript server when it is installed,
// and the answer when it is not (it is not a Debian package).
func TestLSPTypeScript(t *testing.T) {
	a := newAPI(t)
	writeTree(t, a, map[string]string{"/ts/index.ts": "const n: number = 'text';\n"})
	if _, err := exec.LookPath("typescript-language-server"); err != nil {
		resp, body := a.do("POST", "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "typescript", Root: "/ts"})
		wantStatus(t, "typescript without its server", resp.StatusCode, body, 422)
		if !strings.Contains(string(body), "typescript-language-server") {
			t.Errorf("answer %s; want it to name the missing server", body)
		}
		return
	}
	srv := startLSP(t, a, "typescript", "/ts")
	d := diagnostics(t, a, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "index.ts"})
	if !errorOnLine(d.Diagnostics, 0, "number") {
		t.Errorf("diagnostics = %+v; want the type error on line 0", d)
	}
}

// TestLSPStoppedWithDaemon checks that shutdown stops the servers.
func TestLSPStoppedWithDaemon(t *testing.T) {
	needServer(t, "gopls")
	a := newAPI(t)
	writeTree(t, a, map[string]string{"/m/go.mod": "module m\n\ngo 1.22\n"})
	srv := startLSP(t, a, "go", "/m")
	a.d.Server.Close()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(srv.PID, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("gopls %d still runs after the daemon closed", srv.PID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
