#!/usr/bin/env bash
# Builds the execution environment from meta/execution-environment.yml with ansible-builder:
#   1. the local Debian 12 base image (tests/awx/build-base-image.sh, cached);
#   2. the collection tarball build/ee/gpushare-cluster.tar.gz (the definition installs it);
#   3. ansible-builder build -> gpushare-ee:latest (EE_IMAGE to rename). Docker's layer cache
#      makes a rebuild with an unchanged collection take seconds.
# Needs Docker (tests/molecule/ensure-docker.sh starts it) and ansible-builder (.venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
EE_IMAGE=${EE_IMAGE:-gpushare-ee:latest}
log() { echo "build-ee: $*" >&2; }
command -v ansible-builder >/dev/null || { log "ansible-builder missing; run make dev-venv"; exit 1; }

tests/molecule/ensure-docker.sh
tests/awx/build-base-image.sh

out="$root/build/ee"
mkdir -p "$out"
rm -f "$out"/gpushare-cluster-*.tar.gz
ansible-galaxy collection build --force --output-path "$out" >/dev/null
# Repacked with fixed times and owners, so an unchanged collection gives the same bytes and
# Docker reuses every layer; a changed one rebuilds from the collection install on.
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -C "$unpacked" -xzf "$out"/gpushare-cluster-*.tar.gz
rm -f "$out"/gpushare-cluster-*.tar.gz
(cd "$unpacked" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | LC_ALL=C sort \
  | tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - -T - ) | gzip -n >"$out/gpushare-cluster.tar.gz.new"
if cmp -s "$out/gpushare-cluster.tar.gz.new" "$out/gpushare-cluster.tar.gz"; then
  rm "$out/gpushare-cluster.tar.gz.new"; log "collection unchanged since the last build"
else
  mv "$out/gpushare-cluster.tar.gz.new" "$out/gpushare-cluster.tar.gz"
fi

start=$(date +%s)
ansible-builder build -f meta/execution-environment.yml -t "$EE_IMAGE" \
  --container-runtime docker --context "$out/context" -v 2 >"$out/build.log" 2>&1 || {
  tail -n 60 "$out/build.log" >&2; log "ansible-builder build failed (log: $out/build.log)"; exit 1; }
log "built $EE_IMAGE in $(( $(date +%s) - start ))s (log: $out/build.log)"

# What the roles need on the controller is in the image, offline.
docker run --rm --network none "$EE_IMAGE" python3 -c '
import ansible, ansible_runner, kubernetes, scipy, yaml, dateutil, zoneinfo
zoneinfo.ZoneInfo("Europe/Berlin")
print("controller Python libraries present")'
docker run --rm --network none "$EE_IMAGE" ansible-doc -t module gpushare.cluster.plan >/dev/null
collections=$(docker run --rm --network none "$EE_IMAGE" ansible-galaxy collection list 2>/dev/null)
for c in gpushare.cluster kubernetes.core ansible.posix community.general awx.awx; do
  grep -q "^$c " <<<"$collections" || { log "collection $c missing in $EE_IMAGE"; exit 1; }
done
log "$EE_IMAGE has gpushare.cluster, kubernetes.core, ansible.posix, community.general, awx.awx"
