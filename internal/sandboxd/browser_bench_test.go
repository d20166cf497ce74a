package sandboxd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// post sends a JSON body and decodes a 200 answer into out.
func post(b *testing.B, d *sandboxdtest.Daemon, path string, in, out any) {
	b.Helper()
	body, _ := json.Marshal(in)
	resp, err := d.HTTP.Post(d.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		b.Fatalf("POST %s: %d %s", path, resp.StatusCode, buf.Bytes())
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBrowserNavigateRead navigates a tab to a page served on
// loopback (waiting for its load event) and reads its text: the round
// trip of an agent's "open this page and read it".
func BenchmarkBrowserNavigateRead(b *testing.B) {
	needBrowser(b)
	page := "<!doctype html><title>Bench</title><main>" + strings.Repeat("<p>Some text to read.</p>", 200) + "</main>"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}))
	b.Cleanup(site.Close)
	d := sandboxdtest.Start(b, sandboxdtest.Options{})
	var tab sandboxapi.Tab
	post(b, d, "/v1/browser/tabs", sandboxapi.TabRequest{}, &tab)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		post(b, d, "/v1/browser/tabs/"+tab.ID+"/navigate", sandboxapi.NavigateRequest{URL: fmt.Sprintf("%s/?i=%d", site.URL, i)}, nil)
		resp, err := d.HTTP.Get(d.URL + "/v1/browser/tabs/" + tab.ID + "/text")
		if err != nil {
			b.Fatal(err)
		}
		var pt sandboxapi.PageText
		err = json.NewDecoder(resp.Body).Decode(&pt)
		resp.Body.Close()
		if err != nil || !strings.Contains(pt.Text, "Some text to read.") {
			b.Fatalf("text: %v %q", err, pt.Text)
		}
	}
}

// BenchmarkLSPDiagnostics changes a Go file's text and waits for gopls's
// diagnostics of the new version (its settle time included): the round trip of an
// agent's "does this still compile".
func BenchmarkLSPDiagnostics(b *testing.B) {
	needServer(b, "gopls")
	d := sandboxdtest.Start(b, sandboxdtest.Options{})
	dir := filepath.Join(d.Root, "m")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n\ngo 1.22\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	var srv sandboxapi.LSPServer
	post(b, d, "/v1/lsp/servers", sandboxapi.LSPStartRequest{Language: "go", Root: "/m"}, &srv)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("package m\n\nvar x%d int = \"s\"\n", i)
		var out sandboxapi.LSPDiagnostics
		post(b, d, "/v1/lsp/servers/"+srv.ID+"/diagnostics", sandboxapi.LSPDiagnosticsRequest{Path: "a.go", Text: &text}, &out)
		if !out.Complete || len(out.Diagnostics) == 0 {
			b.Fatalf("diagnostics %+v; want the error", out)
		}
	}
}
