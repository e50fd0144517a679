# shellcheck shell=bash
# Sourced by the suites that run Ansible, from the repository root, so each also runs on its
# own outside `make test`: the checkout's virtual environment first on PATH and
# gpushare.cluster.* resolved to this checkout (the link `make collection-link` makes).
# require_tools SUITE TOOL...: fail with the fix when a tool is missing.
if [ -x .venv/bin/python ]; then
  export PATH="$PWD/.venv/bin:$PATH"
fi
if [ ! -e .collections/ansible_collections/gpushare/cluster ]; then
  mkdir -p .collections/ansible_collections/gpushare
  ln -sfn ../../.. .collections/ansible_collections/gpushare/cluster
fi
require_tools() {
  local suite=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$suite: $tool missing; run make dev-venv" >&2; exit 1; }
  done
}
