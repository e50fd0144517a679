#!/usr/bin/env bash
# A signed apt repository with the pkgs.k8s.io layout (<base>/deb/: flat, InRelease,
# Release.key) holding kubelet, kubeadm and kubectl packages made from the binaries built
# from k8s.io/kubernetes (tests/twin/build.sh kube kube-node). The
# kubeadm role installs them from it as it would from pkgs.k8s.io or a mirror of it.
#   usage: build-repo.sh <output base dir>     e.g. .../core:/stable:/v1.35
# Reused when the binaries and this script are unchanged.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../twin/versions.sh
. "$HERE/../twin/versions.sh"
base=$1
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
version=${TWIN_KUBE_VERSION#v}-1.1        # pkgs.k8s.io's revision scheme
arch=$(dpkg --print-architecture)
repo=$base/deb
for b in kubelet kubeadm kubectl; do
  [ -x "$BIN/$b" ] || { echo "build-repo.sh: $BIN/$b missing (tests/twin/build.sh kube-node)" >&2; exit 1; }
done
stamp="$version $(cat "$0" "$BIN/kubelet" "$BIN/kubeadm" "$BIN/kubectl" | sha256sum | cut -c1-16)"
if [ "$(cat "$repo/.stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$repo/InRelease" ]; then
  echo "build-repo.sh: $repo reused" >&2; exit 0
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rm -rf "$repo"; mkdir -p "$repo"

control() {  # package depends description
  mkdir -p "$work/$1/DEBIAN"
  cat > "$work/$1/DEBIAN/control" <<CONTROL
Package: $1
Version: $version
Architecture: $arch
Maintainer: gpushare.cluster tests <tests@gpushare.invalid>
Depends: $2
Section: admin
Priority: optional
Description: $3
 Built by tests/kubeadm/build-repo.sh from k8s.io/kubernetes $TWIN_KUBE_VERSION.
CONTROL
}
control kubelet "conntrack, ethtool, iproute2, iptables, mount, socat, util-linux" "Kubernetes node agent"
control kubeadm "kubelet, kubectl" "Kubernetes cluster bootstrapping tool"
control kubectl "" "Kubernetes command-line client"
sed -i '/^Depends: $/d' "$work/kubectl/DEBIAN/control"
for b in kubelet kubeadm kubectl; do
  install -D -m 0755 "$BIN/$b" "$work/$b/usr/bin/$b"
done
# The kubelet unit and the kubeadm drop-in: kubelet restarts until kubeadm has written
# its configuration, then runs with the flags kubeadm chose.
install -d "$work/kubelet/usr/lib/systemd/system" "$work/kubeadm/usr/lib/systemd/system/kubelet.service.d" \
  "$work/kubelet/etc/kubernetes/manifests"
cat > "$work/kubelet/usr/lib/systemd/system/kubelet.service" <<'UNIT'
[Unit]
Description=kubelet: the Kubernetes node agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
UNIT
cat > "$work/kubeadm/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf" <<'UNIT'
# kubelet as kubeadm runs it: bootstrap and final kubeconfig, the configuration file
# kubeadm writes, the flags of kubeadm-flags.env and the admin's /etc/default/kubelet.
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
UNIT
for b in kubelet kubeadm kubectl; do
  dpkg-deb --root-owner-group -Zgzip --build "$work/$b" "$repo/${b}_${version}_${arch}.deb" >/dev/null
done

# Flat repository index (what apt-ftparchive writes), without needing apt-utils here.
(
  cd "$repo"
  for deb in *.deb; do
    dpkg-deb -f "$deb"
    echo "Filename: ./$deb"
    echo "Size: $(stat -c %s "$deb")"
    echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
    echo
  done > Packages
  gzip -9nk Packages
  {
    echo "Origin: gpushare.cluster tests"
    echo "Label: kubernetes $TWIN_KUBE_VERSION (tests/kubeadm)"
    echo "Date: $(LC_ALL=C date -Ru)"
    echo "Architectures: $arch"
    echo "SHA256:"
    for f in Packages Packages.gz; do
      printf ' %s %s %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "$f"
    done
  } > Release
)
export GNUPGHOME=$work/gnupg
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key 'gpushare.cluster kubeadm test repository' default default never
gpg --batch --quiet --yes --clearsign -o "$repo/InRelease" "$repo/Release"
gpg --batch --quiet --yes -abs -o "$repo/Release.gpg" "$repo/Release"
gpg --batch --quiet --armor --export > "$repo/Release.key"
echo "$stamp" > "$repo/.stamp"
echo "build-repo.sh: $repo ($version)" >&2
