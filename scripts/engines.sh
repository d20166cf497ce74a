#!/usr/bin/env bash
# Starts the container engines the runtime backends and their tests use —
# containerd, then dockerd on top of it — unless they already answer.
# Needs root; without it, says so and leaves the tests to skip.
set -euo pipefail

logdir=/var/log/corral
if [ "$(id -u)" -ne 0 ]; then
  echo "engines: not root; containerd/dockerd not started (their tests will skip)" >&2
  exit 0
fi
mkdir -p "$logdir"

wait_for() { # wait_for NAME CMD...
  local name=$1; shift
  for _ in $(seq 1 120); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  echo "engines: $name did not start; see $logdir/$name.log" >&2
  tail -20 "$logdir/$name.log" >&2 || true
  return 1
}

if command -v containerd >/dev/null && ! ctr version >/dev/null 2>&1; then
  echo "engines: starting containerd"
  setsid containerd >"$logdir/containerd.log" 2>&1 < /dev/null &
  wait_for containerd ctr version
fi
if command -v dockerd >/dev/null && ! docker version >/dev/null 2>&1; then
  echo "engines: starting dockerd"
  setsid dockerd --containerd=/run/containerd/containerd.sock >"$logdir/dockerd.log" 2>&1 < /dev/null &
  wait_for dockerd docker version
fi
