package client_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/testenv"
)

func TestLanguageServerSDK(t *testing.T) {
	if _, err := exec.LookPath("gopls"); err != nil {
		testenv.Unavailable(t, "no gopls installed (scripts/deps.sh installs it)")
	}
	forEachTransport(t, func(t *testing.T, d *daemon) {
		c := d.c
		ctx := testContext(t, 60*time.Second)
		dir := filepath.Join(d.Root, "mod")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src := "package lib\n\n// Twice doubles n.\nfunc Twice(n int) int { return n * 2 }\n\nvar X = Twice(\"two\")\n"
		for name, content := range map[string]string{"go.mod": "module example.com/lib\n\ngo 1.22\n", "lib.go": src} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		srv, err := c.StartLanguageServer(ctx, sandboxapi.LSPStartRequest{Language: "go", Root: "/mod"})
		if err != nil {
			t.Fatalf("StartLanguageServer: %v", err)
		}
		diags, err := c.LSPDiagnostics(ctx, srv.ID, sandboxapi.LSPDiagnosticsRequest{Path: "lib.go"})
		if err != nil || !diags.Complete || len(diags.Diagnostics) == 0 || diags.Diagnostics[0].Range.Start.Line != 5 {
			t.Errorf("LSPDiagnostics = %+v, %v; want the error on line 5", diags, err)
		}
		defs, err := c.LSPDefinition(ctx, srv.ID, sandboxapi.LSPPositionRequest{Path: "lib.go", Line: 5, Character: 9})
		if err != nil || len(defs) != 1 || defs[0].Path != "/mod/lib.go" || defs[0].Range.Start.Line != 3 {
			t.Errorf("LSPDefinition = %+v, %v; want /mod/lib.go line 3", defs, err)
		}
		refs, err := c.LSPReferences(ctx, srv.ID, sandboxapi.LSPPositionRequest{Path: "lib.go", Line: 3, Character: 6})
		if err != nil || len(refs) != 1 {
			t.Errorf("LSPReferences (without the declaration) = %+v, %v; want the one use", refs, err)
		}
		h, err := c.LSPHover(ctx, srv.ID, sandboxapi.LSPPositionRequest{Path: "lib.go", Line: 5, Character: 9})
		if err != nil || !strings.Contains(h.Contents, "Twice doubles n.") {
			t.Errorf("LSPHover = %+v, %v; want the doc comment", h, err)
		}
		syms, err := c.LSPSymbols(ctx, srv.ID, sandboxapi.LSPPositionRequest{Path: "/mod/lib.go"})
		if err != nil || len(syms) != 2 || syms[0].Name != "Twice" || syms[1].Name != "X" {
			t.Errorf("LSPSymbols = %+v, %v; want Twice and X", syms, err)
		}
		list, err := c.LanguageServers(ctx)
		if err != nil || len(list) != 1 || list[0].ID != srv.ID {
			t.Errorf("LanguageServers = %+v, %v", list, err)
		}
		if _, err := c.LSPHover(ctx, srv.ID, sandboxapi.LSPPositionRequest{Path: "../../etc/passwd"}); !errors.Is(err, client.ErrForbidden) {
			t.Errorf("LSPHover outside the root = %v; want ErrForbidden", err)
		}
		if err := c.StopLanguageServer(ctx, srv.ID); err != nil {
			t.Errorf("StopLanguageServer: %v", err)
		}
		if _, err := c.GetLanguageServer(ctx, srv.ID); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("GetLanguageServer after stop = %v; want ErrNotFound", err)
		}
	})
}
