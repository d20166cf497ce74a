package sandboxd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goListDeps returns every package pkg depends on, itself included.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestDomainPackagesHaveNoHTTP keeps transport out of the services
// (STYLE.md rule 5): only package sandboxd speaks HTTP.
func TestDomainPackagesHaveNoHTTP(t *testing.T) {
	for _, pkg := range []string{"procs", "outlog", "files", "ports", "sysinfo", "reaper", "browser", "lsp", "desktop", "forward", "gitops"} {
		for _, dep := range goListDeps(t, "github.com/corral-sh/corral/internal/sandboxd/"+pkg) {
			if dep == "net/http" || strings.HasPrefix(dep, "net/http/") {
				t.Errorf("internal/sandboxd/%s depends on %s", pkg, dep)
			}
		}
	}
}

// TestDaemonStaysLean keeps heavy client libraries (container engines,
// Kubernetes, LLM SDKs, databases) out of the daemon that runs inside
// every sandbox (STYLE.md rule 10).
func TestDaemonStaysLean(t *testing.T) {
	forbidden := []string{
		"github.com/docker/", "github.com/moby/", "github.com/containerd/", "k8s.io/",
		"github.com/openai/", "github.com/anthropics/", "github.com/jackc/", "modernc.org/sqlite",
		"github.com/corral-sh/corral/internal/controlplane", "github.com/corral-sh/corral/internal/runtime",
	}
	for _, dep := range goListDeps(t, "github.com/corral-sh/corral/internal/sandboxd") {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("internal/sandboxd depends on %s", dep)
			}
		}
	}
}
