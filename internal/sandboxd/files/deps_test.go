package files

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the domain package free of HTTP: the transport lives in
// package sandboxd (STYLE.md, house rule 5).
func TestDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
			t.Errorf("package files depends on %s", dep)
		}
	}
}
