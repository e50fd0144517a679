#!/usr/bin/env bash
# Builds the Molecule base image gpushare/debian12-systemd:latest from Debian packages
# (debootstrap, then `docker import`), because no image registry is reachable from the
# test machines. Cached: does nothing when the image already exists (FORCE=1 rebuilds).
# The image runs systemd as PID 1; Molecule starts it privileged with the host cgroup tree.
set -euo pipefail

IMAGE=${IMAGE:-gpushare/debian12-systemd:latest}
SUITE=bookworm
# Packages the roles and Molecule need in the container; python3-apt saves the apt
# module from installing it on first use.
INCLUDE=python3,python3-apt,systemd,systemd-sysv,dbus,sudo,iproute2,procps,kmod,ca-certificates,gnupg

log() { echo "build-image: $*" >&2; }

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE present; not rebuilding (FORCE=1 to rebuild)"
  exit 0
fi

# Reuse the Debian mirror this machine already uses (deb822 or one-line format).
mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
fi
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' \
    | grep -E '/debian/?$' | head -n1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}
log "building $IMAGE from $mirror ($SUITE)"

if ! command -v debootstrap >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

workdir=$(mktemp -d /tmp/gpushare-rootfs.XXXXXX)
trap 'rm -rf "$workdir"' EXIT
rootfs="$workdir/rootfs"

debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$rootfs" "$mirror" \
  >"$workdir/debootstrap.log" 2>&1 || { tail -n 40 "$workdir/debootstrap.log" >&2; exit 1; }

# apt sources inside the image: the same mirror, plus updates and security.
security=${DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $SUITE main
deb $mirror $SUITE-updates main
deb $security $SUITE-security main
SOURCES
# Containers have no consoles or udev to wait for; these units only slow boot or fail.
for unit in getty.target console-getty.service systemd-udevd.service systemd-udev-trigger.service \
  systemd-firstboot.service systemd-remount-fs.service; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
: >"$rootfs/etc/machine-id"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb

tar -C "$rootfs" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'CMD ["/sbin/init"]' \
  - "$IMAGE" >/dev/null
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
