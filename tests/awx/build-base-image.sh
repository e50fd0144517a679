#!/usr/bin/env bash
# The local base image of the execution environment: Debian 12 with python3, pip and venv,
# made with debootstrap and `docker import` (no image registry is reachable from the test
# machines; tests/molecule/build-image.sh makes the Molecule image the same way).
#   tests/awx/build-base-image.sh        gpushare/debian12-python:latest
# Cached: does nothing when the image exists (FORCE=1 rebuilds).
# The host's extra CA certificates (/usr/local/share/ca-certificates/*.crt), needed where
# a TLS-intercepting proxy sits between pip and PyPI, are added to the image's trust store
# at build time; they are never part of the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-gpushare/debian12-python:latest}
# python3-venv: ansible-builder's assemble step makes a venv (Debian's Python has no
# ensurepip, so pip comes from python3-pip, not from the build).
INCLUDE=python3,python3-pip,python3-venv,ca-certificates

log() { echo "build-base-image: $*" >&2; }

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE present; not rebuilding (FORCE=1 to rebuild)"
  exit 0
fi

mirror=$(tests/molecule/debian-mirror.sh)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if ! command -v debootstrap >/dev/null 2>&1 || [ ! -f "$keyring" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap debian-archive-keyring >/dev/null
fi
log "building $IMAGE from $mirror (bookworm)"

workdir=$(mktemp -d /tmp/gpushare-ee-base.XXXXXX)
trap 'rm -rf "$workdir"' EXIT
rootfs="$workdir/rootfs"
debootstrap --variant=minbase --keyring="$keyring" --include="$INCLUDE" bookworm "$rootfs" "$mirror" \
  >"$workdir/debootstrap.log" 2>&1 || { tail -n 40 "$workdir/debootstrap.log" >&2; exit 1; }
echo "deb $mirror bookworm main" >"$rootfs/etc/apt/sources.list"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

# Extra CA certificates of this host (if any) into the image's trust store; pip reads
# /etc/ssl/certs/ca-certificates.crt through /etc/pip.conf.
shopt -s nullglob
extra=(/usr/local/share/ca-certificates/*.crt)
if [ "${#extra[@]}" -gt 0 ]; then
  cp "${extra[@]}" "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null
  log "added ${#extra[@]} extra CA certificate(s) of this host"
fi
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"

tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
