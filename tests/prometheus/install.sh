#!/usr/bin/env bash
# Installs Debian bookworm's `prometheus` package (2.42: prometheus and promtool) without its
# service: the .deb is fetched with apt-get download and unpacked with dpkg -x into
# ${GPUSHARE_PROMETHEUS_CACHE:-~/.cache/gpushare-prometheus}. Idempotent: a second run only
# prints the bin directory. Prints the directory holding prometheus and promtool.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${GPUSHARE_PROMETHEUS_CACHE:-$HOME/.cache/gpushare-prometheus}
bin="$cache/root/usr/bin"
want=2.42.

installed_version() {
  "$bin/prometheus" --version 2>/dev/null | awk 'NR == 1 {print $3}'
}

if [ -x "$bin/prometheus" ] && [ -x "$bin/promtool" ] && [[ "$(installed_version)" == "$want"* ]]; then
  echo "$bin"
  exit 0
fi

command -v apt-get >/dev/null || { echo "install.sh: apt-get is needed to download Debian's prometheus package" >&2; exit 1; }
mkdir -p "$cache/download"
rm -rf "$cache/root.tmp" && mkdir -p "$cache/root.tmp"
cd "$cache/download"
rm -f prometheus_*.deb

# The machine's own apt sources when they offer 2.42, else a private apt state that points
# at the Debian mirror this project uses (tests/molecule/debian-mirror.sh) for bookworm.
candidate=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
if [[ "$candidate" == "$want"* ]]; then
  apt-get download -q "prometheus=$candidate" >&2
else
  mirror=$("$here/../molecule/debian-mirror.sh")
  state="$cache/apt"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  echo "deb $mirror bookworm main" > "$state/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o "Dir::Etc::SourceParts=-"
            -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache"
            -o "Dir::State::status=/dev/null" -o "APT::Architecture=amd64")
  apt-get "${apt_opts[@]}" update -q >&2
  candidate=$(apt-cache "${apt_opts[@]}" policy prometheus | awk '/Candidate:/ {print $2}')
  [[ "$candidate" == "$want"* ]] || {
    echo "install.sh: the mirror $mirror offers prometheus '$candidate' for bookworm, not $want*" >&2; exit 1; }
  apt-get "${apt_opts[@]}" download -q "prometheus=$candidate" >&2
fi
deb=$(ls prometheus_*.deb)
dpkg -x "$deb" "$cache/root.tmp"
rm -rf "$cache/root" && mv "$cache/root.tmp" "$cache/root"
[[ "$(installed_version)" == "$want"* ]] || {
  echo "install.sh: $deb unpacked but $bin/prometheus --version is '$(installed_version)'" >&2; exit 1; }
echo "$bin"
