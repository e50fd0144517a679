#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine: installs Debian's docker.io when
# dockerd is missing and starts dockerd in the background when `docker info` fails.
# Fails (non-zero) when it cannot; it never skips.
set -euo pipefail

log() { echo "ensure-docker: $*" >&2; }

if [ "$(id -u)" -ne 0 ] && ! docker info >/dev/null 2>&1; then
  log "not root and no Docker engine answers; run as root or start dockerd yourself"
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "dockerd missing; installing Debian package docker.io"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io >/dev/null
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

# No init system starts it in CI containers/VMs without systemd: start it ourselves.
DOCKERD_LOG=${DOCKERD_LOG:-$(mktemp /tmp/dockerd.XXXXXX.log)}
log "starting dockerd (log: $DOCKERD_LOG)"
nohup dockerd >"$DOCKERD_LOG" 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "dockerd answers"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; last log lines:"
tail -n 30 "$DOCKERD_LOG" >&2 || true
exit 1
