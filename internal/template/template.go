// Package template defines Corral's sandbox templates and builds them.
//
// A template is a Debian root filesystem made by mmdebstrap from one of the
// definitions in this package, packed as a tarball and then imported by a
// runtime backend under its ref, "corral-<name>" (an image for docker and
// containerd, an unpacked root for bwrap). Every template has the layout
// the runtime contract expects: the agent user (uid and gid 1000, home
// /home/agent, bash), /workspace owned by it, and empty mount points
// /run/corral and /.corral/bin for sandboxd's socket and binary.
//
// Builds are cached by content: the tarball's name carries a hash of the
// exact mmdebstrap invocation (suite, variant, packages, hooks, mirror), so
// building an unchanged definition again only finds the file.
package template

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// RefPrefix starts every template's ref: "corral-default" is the ref of
// the "default" template and runtime.DefaultTemplate.
const RefPrefix = "corral-"

// Definition describes one template.
type Definition struct {
	// Name is the short name, "default"; the backends know the template
	// by Ref().
	Name string
	// Summary says what the template is for, one line.
	Summary string
	// Suite and Variant are mmdebstrap's: the Debian release and the
	// base package set.
	Suite   string
	Variant string
	// Packages are installed on top of the variant, without Recommends.
	Packages []string
	// Hooks are mmdebstrap customize hooks run in order by sh, with the
	// root directory as "$1".
	Hooks []string
}

// Ref is the name backends import the template under.
func (d Definition) Ref() string { return RefPrefix + d.Name }

// The package sets, each extending the one before.
var (
	minimalPackages = []string{"ca-certificates", "procps"}
	defaultPackages = concat(minimalPackages,
		"build-essential", "curl", "git", "iproute2", "jq", "less", "nodejs", "npm",
		"openssh-client", "python3", "python3-venv", "ripgrep", "unzip", "vim-tiny")
	desktopPackages = concat(defaultPackages,
		"chromium", "fluxbox", "fonts-dejavu", "novnc", "websockify", "x11-utils", "x11vnc", "xdotool", "xterm", "xvfb",
		// Language servers for /v1/lsp (Go and Python, with pyflakes
		// for Python's diagnostics).
		"golang-go", "gopls", "python3-pyflakes", "python3-pylsp")
)

// definitions is the table of templates. Order: smallest first.
var definitions = []Definition{
	{Name: "minimal", Summary: "Debian minbase with procps and CA certificates (fast to build; for tests)",
		Suite: "bookworm", Variant: "minbase", Packages: minimalPackages, Hooks: agentHooks},
	{Name: "default", Summary: "development tools: git, curl, python3, nodejs, npm, build-essential, ripgrep, jq; the agent CLIs claude, codex, opencode, gemini",
		Suite: "bookworm", Variant: "minbase", Packages: defaultPackages, Hooks: defaultHooks}, // + agent CLIs: agentclis.go
	{Name: "desktop", Summary: "default plus an X desktop (Xvfb, fluxbox, xdotool, x11vnc, noVNC, xterm, chromium) and language servers (gopls, pylsp, typescript-language-server)",
		Suite: "bookworm", Variant: "minbase", Packages: desktopPackages, Hooks: desktopHooks},
}

// agentHooks give every template the layout of the runtime contract and
// make the result smaller and host-independent.
var agentHooks = []string{
	fmt.Sprintf(`chroot "$1" groupadd --gid %d agent`, runtime.AgentGID),
	fmt.Sprintf(`chroot "$1" useradd --uid %d --gid %d --create-home --home-dir %s --shell /bin/bash agent`,
		runtime.AgentUID, runtime.AgentGID, runtime.AgentHome),
	fmt.Sprintf(`install -d -m 0755 -o %d -g %d "$1%s"`, runtime.AgentUID, runtime.AgentGID, runtime.WorkspaceDir),
	// mmdebstrap's own /run cleanup is skipped (it would remove the
	// mount point); this does the same but keeps /run/lock.
	`find "$1/run" -mindepth 1 -maxdepth 1 ! -name lock -exec rm -rf {} +`,
	fmt.Sprintf(`install -d -m 0755 "$1%s" "$1%s"`, runtime.SocketDir, path.Dir(runtime.BinaryPath)),
	// Engines mount their own; fixed contents keep the tarball the same
	// on every host.
	`echo corral > "$1/etc/hostname" && : > "$1/etc/resolv.conf"`,
	`rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old`,
}

// slimOptions keep documentation, manuals and translations out of the
// template (as Debian's -slim images do), in the build and in whatever the
// agent installs later. Copyright files stay.
var slimOptions = []string{
	"path-exclude=/usr/share/doc/*",
	"path-include=/usr/share/doc/*/copyright",
	"path-exclude=/usr/share/man/*",
	"path-exclude=/usr/share/info/*",
	"path-exclude=/usr/share/groff/*",
	"path-exclude=/usr/share/lintian/*",
	"path-exclude=/usr/share/locale/*",
	"path-include=/usr/share/locale/locale.alias",
}

// Definitions returns every template, smallest first.
func Definitions() []Definition {
	out := make([]Definition, len(definitions))
	for i, d := range definitions {
		d.Packages = slices.Clone(d.Packages)
		d.Hooks = slices.Clone(d.Hooks)
		out[i] = d
	}
	return out
}

// Lookup finds a template by name ("default") or ref ("corral-default");
// "" is the default template.
func Lookup(name string) (Definition, error) {
	if name == "" {
		name = runtime.DefaultTemplate
	}
	short := strings.TrimPrefix(name, RefPrefix)
	for _, d := range Definitions() {
		if d.Name == short {
			return d, nil
		}
	}
	return Definition{}, errdefs.NotFoundf("unknown template %q (templates: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the templates' names, smallest first.
func Names() []string {
	var names []string
	for _, d := range definitions {
		names = append(names, d.Name)
	}
	return names
}

// concat returns a new sorted list of base and more.
func concat(base []string, more ...string) []string {
	out := append(slices.Clone(base), more...)
	slices.Sort(out)
	return slices.Compact(out)
}
