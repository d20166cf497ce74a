package template

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

func TestDefinitions(t *testing.T) {
	defs := Definitions()
	if got, want := Names(), []string{"minimal", "default", "desktop"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %q; want %q", got, want)
	}
	for i, d := range defs {
		if d.Ref() != RefPrefix+d.Name {
			t.Errorf("%s: Ref() = %q", d.Name, d.Ref())
		}
		if d.Suite != "bookworm" || d.Variant != "minbase" {
			t.Errorf("%s: suite %q variant %q; want bookworm minbase", d.Name, d.Suite, d.Variant)
		}
		if !slices.IsSorted(d.Packages) || len(slices.Compact(slices.Clone(d.Packages))) != len(d.Packages) {
			t.Errorf("%s: packages not sorted and unique: %q", d.Name, d.Packages)
		}
		if slices.Contains(d.Packages, "sudo") {
			t.Errorf("%s: has sudo", d.Name)
		}
		if i > 0 { // each template extends the one before
			for _, p := range defs[i-1].Packages {
				if !slices.Contains(d.Packages, p) {
					t.Errorf("%s lacks %s of %s", d.Name, p, defs[i-1].Name)
				}
			}
		}
		hooks := strings.Join(d.Hooks, "\n")
		for _, want := range []string{"--uid 1000", "--home-dir /home/agent", "--shell /bin/bash", `-o 1000 -g 1000 "$1/workspace"`, `"$1/run/corral"`, `"$1/.corral/bin"`, "/var/lib/apt/lists/"} {
			if !strings.Contains(hooks, want) {
				t.Errorf("%s: hooks lack %q", d.Name, want)
			}
		}
	}
	def, err := Lookup("default")
	if err != nil {
		t.Fatal(err)
	}
	if def.Ref() != runtime.DefaultTemplate {
		t.Errorf("default Ref() = %q; want runtime.DefaultTemplate %q", def.Ref(), runtime.DefaultTemplate)
	}
	for _, p := range []string{"git", "curl", "python3", "python3-venv", "nodejs", "npm", "build-essential", "ripgrep", "jq"} {
		if !slices.Contains(def.Packages, p) {
			t.Errorf("default lacks %s", p)
		}
	}
	desk, _ := Lookup("desktop")
	for _, p := range []string{"xvfb", "xdotool", "x11vnc", "novnc", "websockify", "chromium", "fonts-dejavu", "fluxbox", "xterm", "x11-utils",
		"golang-go", "gopls", "python3-pylsp", "python3-pyflakes"} {
		if !slices.Contains(desk.Packages, p) {
			t.Errorf("desktop lacks %s", p)
		}
	}
}

func TestDefinitionsAreCopies(t *testing.T) {
	Definitions()[0].Packages[0] = "changed"
	if Definitions()[0].Packages[0] == "changed" {
		t.Fatal("Definitions() shares its slices with the table")
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "default"},
		{"default", "default"},
		{"corral-default", "default"},
		{"minimal", "minimal"},
		{"corral-desktop", "desktop"},
		{"ubuntu", ""},
		{"corral-", ""},
	}
	for _, tt := range tests {
		d, err := Lookup(tt.in)
		if tt.want == "" {
			if !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("Lookup(%q) error = %v; want not found", tt.in, err)
			}
			continue
		}
		if err != nil || d.Name != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.in, d.Name, err, tt.want)
		}
	}
}

func TestPlanHash(t *testing.T) {
	plan := func(name, mirror string) string {
		t.Helper()
		p, err := NewPlan(Options{Name: name, CacheDir: "/c", Mirror: mirror})
		if err != nil {
			t.Fatal(err)
		}
		return p.Path
	}
	a := plan("minimal", "http://m/debian")
	if b := plan("minimal", "http://m/debian"); a != b {
		t.Errorf("same plan, different paths: %s, %s", a, b)
	}
	if !strings.HasPrefix(a, "/c/minimal-") || !strings.HasSuffix(a, ".tar") || len(a) != len("/c/minimal-")+12+len(".tar") {
		t.Errorf("path = %s; want /c/minimal-<12 hex>.tar", a)
	}
	if b := plan("minimal", "http://other/debian"); a == b {
		t.Errorf("changing the mirror kept path %s", a)
	}
	if b := plan("default", "http://m/debian"); strings.TrimPrefix(a, "/c/minimal-") == strings.TrimPrefix(b, "/c/default-") {
		t.Errorf("minimal and default have the same hash: %s, %s", a, b)
	}

	def, _ := Lookup("minimal")
	base := hashArgs(def.args("http://m/debian"))
	changes := map[string]func(*Definition){
		"package added":   func(d *Definition) { d.Packages = append(d.Packages, "git") },
		"package swapped": func(d *Definition) { d.Packages[0] = "curl" },
		"hook changed":    func(d *Definition) { d.Hooks[0] += " " },
		"suite changed":   func(d *Definition) { d.Suite = "trixie" },
		"variant changed": func(d *Definition) { d.Variant = "apt" },
	}
	for name, change := range changes {
		d, _ := Lookup("minimal")
		change(&d)
		if got := hashArgs(d.args("http://m/debian")); got == base {
			t.Errorf("%s: hash stayed %s", name, got)
		}
	}
}

func TestArgs(t *testing.T) {
	d, _ := Lookup("minimal")
	args := d.args("http://m/debian")
	if got, want := args[len(args)-3:], []string{"bookworm", "-", "http://m/debian"}; !slices.Equal(got, want) {
		t.Errorf("args end %q; want %q", got, want)
	}
	for _, want := range []string{"--variant=minbase", "--format=tar", "--include=ca-certificates,procps", "--skip=cleanup/run"} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %q: %q", want, args)
		}
	}
}
