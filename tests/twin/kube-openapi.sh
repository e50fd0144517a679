#!/usr/bin/env bash
# Prints the directory holding Kubernetes' OpenAPI v3 documents (api/openapi-spec/v3) of the
# release the twin runs (TWIN_KUBE_VERSION in versions.sh), from the Go module k8s.io/kubernetes
# (build.sh builds the twin's API server from the same module). The unit tests validate the
# team manifests (renderers/render_teams.py) against these schemas.
# usage: tests/twin/kube-openapi.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.sh
. "$HERE/versions.sh"
exec "$HERE/go-module-dir.sh" k8s.io/kubernetes "$TWIN_KUBE_VERSION" api/openapi-spec/v3 apis__apps__v1_openapi.json
