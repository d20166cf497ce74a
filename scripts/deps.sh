#!/usr/bin/env bash
# Installs the Debian packages Corral's tests and `make up` use, if any is
# missing. Runs apt-get only when needed; needs root (or sudo) for that.
set -euo pipefail

packages=(
  git make gcc ca-certificates  # build (gcc: the race detector)
  bash procps vim util-linux    # PTY tests drive bash, top and vim; unshare for PID 1 tests
  iproute2                      # ss, for cross-checking /v1/ports
  docker.io containerd runc iptables   # the docker and containerd runtimes
  containernetworking-plugins   # containerd's network egress (bridge, host-local, firewall)
  bubblewrap                    # the bwrap runtime
  mmdebstrap                    # sandbox templates from Debian packages
  postgresql                    # the store's second backend
  xvfb x11vnc xdotool fluxbox xterm novnc  # /v1/desktop tests on the host (the desktop template has them too)
  chromium                      # the web UI's end-to-end tests (playwright-core drives it)
  python3-pylsp python3-pyflakes  # /v1/lsp tests: the Python language server and its checker (chromium above serves /v1/browser's)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  echo "deps: Go is not installed; install Go 1.26+ (https://go.dev/dl) into /usr/local/go" >&2
  exit 1
fi

# The web UI (make web) builds with Vite, which needs Node.js 20.19+;
# Debian 12's own nodejs is 18, so it is not installed from apt here.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null \
   || ! command -v npm >/dev/null; then
  echo "deps: Node.js 20.19+ and npm are needed for the web UI; install them (https://nodejs.org, or NodeSource's Debian packages)" >&2
  exit 1
fi

# typescript-language-server for the /v1/lsp tests: not a Debian package.
if ! command -v typescript-language-server >/dev/null; then
  echo "deps: installing typescript-language-server"
  npm_sudo=""
  [ "$(id -u)" -eq 0 ] || npm_sudo="sudo"
  $npm_sudo npm install -g --no-fund --no-audit typescript@5 typescript-language-server@4
fi

# gopls for the /v1/lsp tests. Debian's (0.5) predates the Go this repo
# needs, so it is built with the Go toolchain (through the module proxy),
# into /usr/local/bin as root, else into ~/go/bin, where sandboxd also looks.
gopls_version=v0.23.0 # the newest that builds with Go 1.26
if ! { command -v gopls || command -v ~/go/bin/gopls; } >/dev/null 2>&1 \
   || ! { gopls version 2>/dev/null || ~/go/bin/gopls version 2>/dev/null; } | grep -q "gopls $gopls_version"; then
  echo "deps: installing gopls $gopls_version"
  gobin="$HOME/go/bin"
  [ "$(id -u)" -ne 0 ] || gobin=/usr/local/bin
  (cd / && GOBIN="$gobin" GOFLAGS= "$(command -v go || echo /usr/local/go/bin/go)" install "golang.org/x/tools/gopls@$gopls_version")
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
