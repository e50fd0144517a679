# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every node advertises, read back from the rendered manifests the roles apply (the
MIG Manager and device-plugin ConfigMaps and the node labels of each state) by
tests/twin/advertised.py, which follows the upstream formats and shares no code with the
collection, against the Plan's ``advertised``. A mig-parted config missing a profile, or a
device-plugin config with the wrong replicas under the right name, fails here."""

from __future__ import annotations

import sys

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import manifest_files
from inventories import EXAMPLE_NAMES, ROOT, load_dir, load_example

sys.path.insert(0, str(ROOT / "tests" / "twin"))
import advertised as oracle  # noqa: E402


def _objects(files, path):
    return [o for o in yaml.safe_load_all(files[path]) if o]


def states(example: str, variables: dict | None = None):
    """(state name, node name, labels, what the node advertises by the oracle, by the Plan)."""
    variables = variables or load_example(example)
    gpu_count = {host: node["gpu_count"] for host, node in variables["gpushare_nodes"].items()}
    plan = build_plan(variables)
    files = {f["path"]: f["content"] for f in manifest_files(plan)}
    configmaps = {o["metadata"]["name"]: o["data"] for o in _objects(files, "10-gpu-operator.yaml")
                  if o["kind"] == "ConfigMap"}
    planned = {("base", n["name"]): n["advertised"] for n in plan["nodes"]}
    planned.update({(w["name"], n["name"]): n["advertised"] for w in plan["windows"] for n in w["nodes"]})
    sources = [("base", "20-node-labels.yaml")] + [(w["name"], "windows/%s.yaml" % w["name"]) for w in plan["windows"]]
    out = []
    for state, path in sources:
        for node in (o for o in _objects(files, path) if o["kind"] == "Node"):
            name, labels = node["metadata"]["name"], node["metadata"]["labels"]
            out.append((state, name, oracle.advertised(configmaps, labels, gpu_count[name]), planned[(state, name)]))
    return out


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_node_advertises_what_the_plan_says(example):
    found = states(example)
    assert found
    for state, name, by_configmaps, by_plan in found:
        assert by_configmaps == by_plan, (state, name)


def test_the_oracle_reads_sharing_and_mig_as_upstream_documents():
    """Hand-written configs in the upstream formats, with the counts worked out by hand."""
    mig = {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": {
        "mine": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.18gb": 2, "3g.71gb": 1}},
                 {"devices": [1, 2], "mig-enabled": False},
                 {"devices": [3], "mig-enabled": True, "mig-devices": {"7g.141gb": 1}}]}})}
    plugin = {"default": "version: v1\nflags: {migStrategy: none}\n",
              "mine": yaml.safe_dump({"version": "v1", "flags": {"migStrategy": "mixed"}, "sharing": {"timeSlicing": {
                  "renameByDefault": True, "resources": [{"name": "nvidia.com/mig-7g.141gb", "replicas": 5}]}}})}
    labels = {"nvidia.com/mig.config": "mine", "nvidia.com/device-plugin.config": "mine"}
    assert oracle.advertised({"mig": mig, "dp": plugin}, labels, 4) == {
        "nvidia.com/gpu": 2, "nvidia.com/mig-1g.18gb": 2, "nvidia.com/mig-3g.71gb": 1,
        "nvidia.com/mig-7g.141gb.shared": 5}
    assert oracle.advertised({"mig": mig, "dp": plugin}, {}, 4) == {"nvidia.com/gpu": 4}
    with pytest.raises(AssertionError, match="not in the ConfigMap"):
        oracle.advertised({"mig": mig, "dp": plugin}, {"nvidia.com/mig.config": "gone"}, 4)


def test_the_mps_node_advertises_what_the_plan_says():
    """tests/twin/inventory-mps: two L40S shared by MPS, 4 replicas each: 8 nvidia.com/gpu.shared."""
    found = states("inventory-mps", load_dir(ROOT / "tests" / "twin" / "inventory-mps"))
    assert [(s, n, a) for s, n, a, _p in found] == [("base", "mps-l40s-01", {"nvidia.com/gpu.shared": 8})]
    assert all(a == p for _s, _n, a, p in found)


def test_the_oracle_reads_mps_as_upstream_documents():
    """README "With CUDA MPS": replicas per full GPU; no MPS with MIG or under mig-strategy mixed."""
    mig = {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": {
        "none": [{"devices": "all", "mig-enabled": False}],
        "cut": [{"devices": [0], "mig-enabled": True, "mig-devices": {"1g.18gb": 7}}, {"devices": [1], "mig-enabled": False}]}})}
    mps = {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {"mps": {
        "renameByDefault": True, "failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 10}]}}}
    plugin = {"mps": yaml.safe_dump(mps), "mixed": yaml.safe_dump(dict(mps, flags={"migStrategy": "mixed"}))}
    labels = {"nvidia.com/mig.config": "none", "nvidia.com/device-plugin.config": "mps"}
    assert oracle.advertised({"mig": mig, "dp": plugin}, labels, 8) == {"nvidia.com/gpu.shared": 80}   # README: 8 GPUs x 10
    for bad in (dict(labels, **{"nvidia.com/device-plugin.config": "mixed"}), dict(labels, **{"nvidia.com/mig.config": "cut"})):
        with pytest.raises(AssertionError, match="does not start with sharing.mps"):
            oracle.advertised({"mig": mig, "dp": plugin}, bad, 2)
