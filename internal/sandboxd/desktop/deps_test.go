package desktop

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHTTP keeps transport out of the desktop service (STYLE.md rule
// 5): package sandboxd serves it.
func TestNoHTTP(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/corral-sh/corral/internal/sandboxd/desktop").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
			t.Errorf("internal/sandboxd/desktop depends on %s", dep)
		}
	}
}
