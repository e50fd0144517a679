#!/usr/bin/env bash
# The cluster twin: builds (or reuses) etcd, Kubernetes, KWOK and Kueue from Go modules,
# starts them on loopback, runs the smoke test, and always stops them. Fails, never skips,
# when any step cannot run (no Go toolchain, no module proxy, a component not starting).
# A cold build takes about 20 minutes on 2 idle cores (docs/twin.md); later runs reuse the
# cache in ${GPUSHARE_TWIN_CACHE:-$HOME/.cache/gpushare-twin} and take seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${TWIN_PYTHON:-python}
own_state=false
if [ -z "${GPUSHARE_TWIN_STATE:-}" ]; then
  GPUSHARE_TWIN_STATE=$(mktemp -d /tmp/gpushare-twin.XXXXXX); own_state=true
fi
export GPUSHARE_TWIN_STATE

tests/twin/build.sh
# shellcheck disable=SC2317  # invoked by the EXIT trap
finish() {
  local rc=$?
  # Logs are kept when something failed; a passing run leaves nothing behind.
  if [ "$rc" -eq 0 ] && [ "$own_state" = true ]; then
    tests/twin/down.sh --purge
  else
    tests/twin/down.sh
    echo "50-twin: logs in $GPUSHARE_TWIN_STATE/logs" >&2
  fi
  exit "$rc"
}
trap finish EXIT
TWIN_PYTHON=$PY tests/twin/up.sh
rc=0
"$PY" -m pytest tests/twin -q -p no:cacheprovider || rc=$?
if [ "$rc" -ne 0 ]; then
  for c in kueue kube-scheduler kube-controller-manager kwok; do
    echo "--- last lines of $GPUSHARE_TWIN_STATE/logs/$c.log"
    tail -n 30 "$GPUSHARE_TWIN_STATE/logs/$c.log" || true
  done
fi
exit "$rc"
