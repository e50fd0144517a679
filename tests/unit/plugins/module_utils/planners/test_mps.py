# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MPS planned end to end on an L40S server (tests/twin/inventory-mps, which the twin applies):
the device-plugin config, what the node advertises, the team's quota and what each pod gets
(the device plugin's MPS control daemon splits memory and compute equally between a card's
replicas: k8s-device-plugin README, "With CUDA MPS"); and what the device plugin cannot do,
refused with the inventory path and the fix."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import PlanInvalid, build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import split_table
from inventories import load_dir, load_example

L40S_MIB = 46068      # the L40S's memory as nvidia-smi reports it (catalogue source)
MPS_INVENTORY = Path(__file__).resolve().parents[4] / "twin" / "inventory-mps"
NODE = "hostvars[mps-l40s-01].gpushare_node"


def _inventory() -> dict:
    return copy.deepcopy(load_dir(MPS_INVENTORY))


def _refused(variables: dict) -> list:
    with pytest.raises(PlanInvalid) as refused:
        build_plan(variables)
    return refused.value.problems


def test_mps_config_advertised_quota_and_per_pod_share():
    plan = build_plan(_inventory())
    (node,) = plan["nodes"]
    # the upstream format (README "With CUDA MPS"; failRequestsGreaterThanOne is what the plugin
    # forces for MPS, api/config/v1/config.go), one resource, the replicas of the inventory
    assert node["device_plugin_config"]["config"] == {"version": "v1", "flags": {"migStrategy": "none"}, "sharing": {
        "mps": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
    assert node["labels"]["nvidia.com/device-plugin.config"] == node["device_plugin_config"]["name"]
    assert node["advertised"] == {"nvidia.com/gpu.shared": 8}           # 2 cards x 4
    (team,) = plan["teams"]
    assert team["owns"] == {"l40s-shared nvidia.com/gpu.shared": 8}
    for gpu in node["gpus"]:
        assert gpu["per_client"] == {"compute_percent": 25, "memory_mib": L40S_MIB // 4}
    line = next(line for line in split_table(plan) if line.startswith("mps-l40s-01 0"))
    assert "MPS x4 -> nvidia.com/gpu.shared (each pod: 25 % of the compute, 11517 MiB)" in line


def test_time_slicing_sets_no_per_pod_limit():
    plan = build_plan(load_example("mixed-fleet"))
    node = next(n for n in plan["nodes"] if n["name"] == "l40s-01")
    assert all("per_client" not in g for g in node["gpus"])
    assert node["device_plugin_config"]["config"]["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True


def test_mps_on_some_gpus_of_a_node_is_refused():
    inv = _inventory()
    inv["gpushare_nodes"]["mps-l40s-01"]["gpus"][1] = {"index": 1, "mode": "whole", "team": "mps-inference"}
    (p,) = [p for p in _refused(inv) if "not mps" in p.message]
    assert p.path == NODE + ".gpus" and "GPUs [1] are not mps" in p.message
    assert p.allowed == "mode: mps on all GPUs of the node"


def test_mps_with_two_replica_counts_on_a_node_is_refused():
    inv = _inventory()
    inv["gpushare_nodes"]["mps-l40s-01"]["gpus"][1]["replicas"] = 2
    (p,) = _refused(inv)
    assert p.path == NODE + ".gpus" and "same replicas" in p.message and p.value == [2, 4]
    assert p.allowed == "one replica count per node"


def test_mps_on_a_dra_node_is_refused():
    inv = _inventory()
    inv["gpushare_nodes"]["mps-l40s-01"]["dra"] = True
    problems = _refused(inv)
    assert any(p.path == NODE + ".dra" and p.allowed == "dra: true with whole or mig GPUs only" for p in problems)


def test_mps_in_a_cluster_with_mig_slices_is_refused():
    """The mixed fleet's A100s are cut by MIG, so the ClusterPolicy's mig.strategy is mixed; the
    GPU Operator hands it to every device plugin, which refuses MPS under it."""
    variables = load_example("mixed-fleet")
    node = variables["gpushare_nodes"]["l40s-01"]
    node["gpus"] = [dict(g, mode="mps", replicas=3, team="data-science") for g in node["gpus"]]
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"]
                                       if w.get("sharing") not in ("timeslice",) and w.get("kind") != "notebook"]
    variables["gpushare_workloads"].append({"name": "small-models", "team": "data-science", "kind": "serving",
                                           "sharing": "mps", "replicas": 12})
    (p,) = _refused(variables)
    assert p.path == "hostvars[l40s-01].gpushare_node.gpus"
    assert "MPS cannot run in a cluster with MIG slices (on a100-01, a100-02" in p.message
    assert "mig-strategy mixed" in p.message and "timeslice" in p.hint


def test_mps_next_to_a_mig_window_is_refused():
    """A MIG layout only in a sharing window still makes the cluster's strategy mixed."""
    inv = _inventory()
    inv["gpushare_nodes"]["mps-h200-01"] = {"gpu_model": "h200", "gpu_count": 1, "gpus": [
        {"index": 0, "mode": "whole", "team": "mps-inference",
         "schedule": [{"name": "night", "from": "19:00", "until": "07:00", "mode": "mig"}]}]}
    (p,) = _refused(inv)
    assert p.path == NODE + ".gpus" and "(on mps-h200-01)" in p.message


def test_mps_next_to_whole_mig_capable_gpus_plans():
    """Whole H200s (no MIG slice anywhere) leave the strategy none: MPS plans."""
    inv = _inventory()
    inv["gpushare_nodes"]["mps-h200-01"] = {"gpu_model": "h200", "gpu_count": 1,
                                            "gpus": [{"index": 0, "mode": "whole", "team": "mps-inference"}]}
    plan = build_plan(inv)
    assert {n["name"]: n["advertised"] for n in plan["nodes"]} == {
        "mps-l40s-01": {"nvidia.com/gpu.shared": 8}, "mps-h200-01": {"nvidia.com/gpu": 1}}
