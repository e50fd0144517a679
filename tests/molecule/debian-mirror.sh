#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses (deb822 or one-line sources), so the
# Molecule image and scenarios use the same one; http://deb.debian.org/debian otherwise.
set -euo pipefail
if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; exit 0; fi
mirror=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
  | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' \
    | grep -E '/debian/?$' | head -n1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}
echo "${mirror%/}"
