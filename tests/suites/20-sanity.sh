#!/usr/bin/env bash
# ansible-test sanity on a clean copy of the tracked files in ansible_collections/gpushare/cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/gpushare/cluster"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$dest")
# ansible-test fetches get-pip.py from a host this machine cannot reach; pip comes from
# Python's own ensurepip instead (the file name is the cache slot ansible-test looks for).
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
for version in 24.2 25.0 25.1 25.2 25.3; do
  file="$cache/get_pip_${version//./_}.py"
  [ -s "$file" ] || printf '%s\n' '# stand-in for get-pip.py: bootstrap pip with ensurepip' \
    'import ensurepip' 'ensurepip.bootstrap(upgrade=True)' > "$file"
done
command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }
cd "$dest"
git init -q . && git add -A >/dev/null
python_version=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ansible-test sanity --venv --python "$python_version" --color no
