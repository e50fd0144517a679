"""Rendered Kubernetes objects against the OpenAPI v3 documents of the Kubernetes release the
twin runs (tests/twin/kube-openapi.sh takes them from the Go module k8s.io/kubernetes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from inventories import ROOT

SCRIPT = ROOT / "tests" / "twin" / "kube-openapi.sh"


def _closed(node):
    """Every object schema refuses fields it does not name, as the API server's strict field
    validation (kubectl's default) does."""
    if isinstance(node, dict):
        node = {k: _closed(v) for k, v in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_closed(v) for v in node]
    return node


def validator(document: str, kind: str):
    """A function that validates an object of ``kind`` (e.g. io.k8s.api.resource.v1.ResourceClaimTemplate)
    against ``document`` (e.g. apis__resource.k8s.io__v1_openapi.json). No Go or no module proxy
    is a failure, not a skip."""
    run = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("%s failed (exit %d): %s" % (SCRIPT, run.returncode, run.stderr), pytrace=False)
    spec = json.loads((Path(run.stdout.strip()) / document).read_text())
    schema = {"$ref": "#/components/schemas/%s" % kind, "components": _closed(spec["components"])}
    return lambda obj: jsonschema.validate(obj, schema)
