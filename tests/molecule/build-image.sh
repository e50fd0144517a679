#!/usr/bin/env bash
# Builds a Molecule base image from distribution packages (debootstrap, then
# `docker import`), because no image registry is reachable from the test machines.
#   tests/molecule/build-image.sh               gpushare/debian12-systemd:latest (make test)
#   DISTRO=ubuntu2404 tests/molecule/build-image.sh   gpushare/ubuntu2404-systemd:latest
#   DISTRO=ubuntu2204 tests/molecule/build-image.sh   gpushare/ubuntu2204-systemd:latest
# Ubuntu needs an Ubuntu archive mirror (UBUNTU_MIRROR, default archive.ubuntu.com).
# Rocky cannot be debootstrapped: see tests/molecule/Dockerfile.rocky9 and docs/testing.md.
# Cached: does nothing when the image already exists (FORCE=1 rebuilds).
# The image runs systemd as PID 1; Molecule starts it with the host cgroup tree.
set -euo pipefail

DISTRO=${DISTRO:-debian12}
IMAGE=${IMAGE:-gpushare/${DISTRO}-systemd:latest}
# Packages the roles and Molecule need in the container; python3-apt saves the apt
# module from installing it on first use.
INCLUDE=python3,python3-apt,systemd,systemd-sysv,dbus,sudo,iproute2,procps,kmod,ca-certificates,gnupg
case "$DISTRO" in
  debian12) SUITE=bookworm ;;
  ubuntu2204) SUITE=jammy ;;
  ubuntu2404) SUITE=noble ;;
  *) echo "build-image: unknown DISTRO $DISTRO (debian12, ubuntu2204, ubuntu2404)" >&2; exit 2 ;;
esac

log() { echo "build-image: $*" >&2; }

if [ "${FORCE:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE present; not rebuilding (FORCE=1 to rebuild)"
  exit 0
fi

if [ "$DISTRO" = debian12 ]; then
  # Reuse the Debian mirror this machine already uses.
  mirror=$("$(dirname "$0")/debian-mirror.sh")
  security=${DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
  components=main
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  keyring_pkg=debian-archive-keyring
else
  mirror=${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
  security=$mirror
  components=main,universe
  keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg
  keyring_pkg=ubuntu-keyring
fi
log "building $IMAGE from $mirror ($SUITE)"

if ! command -v debootstrap >/dev/null 2>&1 || [ ! -f "$keyring" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap "$keyring_pkg" >/dev/null
fi

workdir=$(mktemp -d /tmp/gpushare-rootfs.XXXXXX)
trap 'rm -rf "$workdir"' EXIT
rootfs="$workdir/rootfs"

debootstrap --variant=minbase --keyring="$keyring" --components="$components" \
  --include="$INCLUDE" "$SUITE" "$rootfs" "$mirror" \
  >"$workdir/debootstrap.log" 2>&1 || { tail -n 40 "$workdir/debootstrap.log" >&2; exit 1; }

# apt sources inside the image: the same mirror, plus updates and security.
cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $SUITE ${components//,/ }
deb $mirror $SUITE-updates ${components//,/ }
deb $security $SUITE-security ${components//,/ }
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
