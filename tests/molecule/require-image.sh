#!/usr/bin/env bash
# Molecule dependency step: fail early, with a message a person can act on, when the
# scenario's local image is missing (no registry is reachable to pull it from).
set -euo pipefail
for image in "$@"; do
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    case "$image" in
      gpushare/debian12-systemd:*) hint="run tests/molecule/build-image.sh" ;;
      gpushare/ubuntu*-systemd:*)
        distro=${image#gpushare/}; distro=${distro%%-*}
        hint="build it on a machine that can (DISTRO=$distro tests/molecule/build-image.sh needs an Ubuntu mirror), see docs/testing.md" ;;
      *) hint="build it on a machine that can, see docs/testing.md" ;;
    esac
    echo "image $image not present; $hint" >&2
    exit 1
  fi
done
