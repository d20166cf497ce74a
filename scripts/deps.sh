#!/usr/bin/env bash
# Installs the Debian packages Corral's tests and `make up` use, if any is
# missing. Runs apt-get only when needed; needs root (or sudo) for that.
set -euo pipefail

packages=(
  git make gcc ca-certificates  # build (gcc: the race detector)
  bash procps vim util-linux    # PTY tests drive bash, top and vim; unshare for PID 1 tests
  iproute2                      # ss, for cross-checking /v1/ports
  docker.io containerd runc iptables   # the docker and containerd runtimes
  bubblewrap                    # the bwrap runtime
  mmdebstrap                    # sandbox templates from Debian packages
  postgresql                    # the store's second backend
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  echo "deps: Go is not installed; install Go 1.26+ (https://go.dev/dl) into /usr/local/go" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
