#!/usr/bin/env bash
# Two twins on one machine share Kueue's fixed metrics certificate path (up.sh). Starts two,
# stops the first: the second's Kueue must still restart; stops the second: its marker is gone,
# and so is the path unless another twin (50-twin, running beside 52-multikueue) still holds a
# marker there, in which case the certificate stays. Fails with the step that went wrong.
# About 50 s with the binaries built.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
M=/etc/kueue/metrics/certs
a=$(mktemp -d /tmp/gpushare-twin-a.XXXXXX); b=$(mktemp -d /tmp/gpushare-twin-b.XXXXXX)
trap 'for s in "$a" "$b"; do GPUSHARE_TWIN_STATE=$s tests/twin/down.sh --purge >/dev/null 2>&1; done' EXIT
fail() { echo "shared-cert-check: $*" >&2; exit 1; }
for s in "$a" "$b"; do
  GPUSHARE_TWIN_STATE=$s tests/twin/up.sh > "$s.log" 2>&1 || { tail -5 "$s.log" >&2; fail "a twin did not start"; }
done
markers=$(cat "$a/kueue-metrics-marker" "$b/kueue-metrics-marker") || fail "up.sh recorded no marker"   # --purge removes the states
GPUSHARE_TWIN_STATE=$a tests/twin/down.sh --purge >/dev/null 2>&1
[ -e "$M/tls.crt" ] || fail "the first twin to stop removed $M/tls.crt under the other"
GPUSHARE_TWIN_STATE=$b tests/twin/restart.sh kueue 1 >/dev/null 2>&1 || fail "the other twin's Kueue did not restart"
GPUSHARE_TWIN_STATE=$b tests/twin/down.sh --purge >/dev/null 2>&1
for marker in $markers; do
  [ ! -e "$marker" ] || fail "a stopped twin's marker was left in $M"
done
if compgen -G "$M/.gpushare-twin.*" >/dev/null; then
  [ -e "$M/tls.crt" ] || fail "the certificate went while another twin's marker is still in $M"
else
  [ ! -e "$M" ] || fail "$M left after the last twin stopped"
fi
rm -f "$a.log" "$b.log"
echo "shared-cert-check: two twins share Kueue's metrics certificate path; the last one removes it"
