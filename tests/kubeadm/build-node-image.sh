#!/usr/bin/env bash
# Builds the kubeadm test's node image (tests/kubeadm/node) on top of the Molecule Debian 12
# systemd image (tests/molecule/build-image.sh) and prints its name. The tag is a hash of
# the inputs, so a changed Dockerfile or entrypoint rebuilds and an unchanged one is reused.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
base=gpushare/debian12-systemd:latest
docker image inspect "$base" >/dev/null 2>&1 || "$HERE/../molecule/build-image.sh" >&2
mirror=$("$HERE/../molecule/debian-mirror.sh")
tag=$( (cat "$HERE/node/Dockerfile" "$HERE/node/entrypoint.sh"; docker image inspect -f '{{.Id}}' "$base"; echo "$mirror") \
  | sha256sum | cut -c1-12)
image=gpushare/kubeadm-node:$tag
if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "build-node-image.sh: building $image" >&2
  DOCKER_BUILDKIT=0 docker build -q --build-arg "DEBIAN_MIRROR=$mirror" -t "$image" "$HERE/node" >&2
fi
echo "$image"
