#!/usr/bin/env bash
# The control-plane images kubeadm asks for, built without a registry: one `docker import`
# of a minimal root filesystem per image, named as `kubeadm config images list` names them
# for the test inventory's image repository (a private mirror, as a user would set it) and
# etcd/CoreDNS tags, saved in one archive for `ctr -n k8s.io images import`.
#   kube-apiserver, kube-controller-manager, kube-scheduler, etcd: the static binary alone
#   kube-proxy: the binary plus iptables/conntrack and their libraries from the node image
#   coredns, pause: the binary as the image's entrypoint
#   usage: build-images.sh <kubeadm config file> <node image> <output archive>
# Reused when the image list, the binaries and this script are unchanged.
set -euo pipefail
config=$1 node_image=$2 archive=$3
CACHE=${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin}
BIN=$CACHE/bin
mapfile -t images < <("$BIN/kubeadm" config images list --config "$config" 2>/dev/null)
[ ${#images[@]} -ge 7 ] || { echo "build-images.sh: kubeadm listed ${#images[@]} images: ${images[*]}" >&2; exit 1; }
stamp="$(printf '%s\n' "${images[@]}" "$node_image") $(cat "$0" "$BIN"/{kube-apiserver,kube-controller-manager,kube-scheduler,kube-proxy,etcd,coredns,pause} | sha256sum | cut -c1-16)"
if [ "$(cat "$archive.stamp" 2>/dev/null)" = "$stamp" ] && [ -f "$archive" ]; then
  echo "build-images.sh: $archive reused (${images[*]})" >&2; exit 0
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

import() {  # rootfs image entrypoint-json
  tar -C "$1" -c . | docker import --change 'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENTRYPOINT $3" - "$2" >/dev/null
}
binary_image() {  # image binary entrypoint-json
  local root
  root=$work/$(basename "${1%%:*}")
  install -D -m 0755 "$BIN/$2" "$root/usr/local/bin/$2"
  mkdir -p "$root/tmp" "$root/etc"; chmod 1777 "$root/tmp"
  echo 'root:x:0:0:root:/root:/sbin/nologin' > "$root/etc/passwd"
  import "$root" "$1" "$3"
}

for image in "${images[@]}"; do
  name=$(basename "${image%%:*}")
  case "$name" in
    kube-apiserver|kube-controller-manager|kube-scheduler|etcd)
      binary_image "$image" "$name" "[\"/usr/local/bin/$name\"]" ;;
    coredns) binary_image "$image" coredns '["/usr/local/bin/coredns"]' ;;
    pause) binary_image "$image" pause '["/usr/local/bin/pause"]' ;;
    kube-proxy)
      # kube-proxy runs iptables(-save/-restore) and conntrack: take them, their extension
      # modules and libraries from the node image (Debian 12, nft backend like the node).
      root=$work/kube-proxy; mkdir -p "$root"
      docker run --rm --entrypoint /bin/bash "$node_image" -c '
        set -e
        bins=$(for b in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore conntrack; do command -v $b; done)
        ext=/usr/lib/x86_64-linux-gnu/xtables
        libs=$(for f in $bins $ext/*.so; do ldd "$(readlink -f "$f")"; done | awk "/=> \\// {print \$3} /^\\t\\/lib64/ {print \$1}" | sort -u)
        tar -c --dereference $bins $libs $ext /etc/protocols /etc/services /etc/ethertypes 2>/dev/null' | tar -C "$root" -x
      install -D -m 0755 "$BIN/kube-proxy" "$root/usr/local/bin/kube-proxy"
      mkdir -p "$root/tmp" "$root/run" "$root/var/lib"; chmod 1777 "$root/tmp"
      import "$root" "$image" '["/usr/local/bin/kube-proxy"]' ;;
    *) echo "build-images.sh: no recipe for $image" >&2; exit 1 ;;
  esac
  echo "build-images.sh: $image" >&2
done
mkdir -p "$(dirname "$archive")"
docker save "${images[@]}" -o "$archive.tmp"
mv "$archive.tmp" "$archive"
echo "$stamp" > "$archive.stamp"
echo "build-images.sh: $archive ($(du -m "$archive" | cut -f1) MiB)" >&2
