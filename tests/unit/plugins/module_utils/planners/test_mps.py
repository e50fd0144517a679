# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MPS planned end to end on an L40S server: the device-plugin config, what the node
advertises, the team's quota and what each pod gets (the device plugin's MPS control daemon
splits memory and compute equally between a card's replicas: k8s-device-plugin README)."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import split_table
from inventories import load_example

L40S_MIB = 46068      # the L40S's memory as nvidia-smi reports it (catalogue source)


def _mps_fleet():
    variables = load_example("mixed-fleet")
    node = variables["gpushare_nodes"]["l40s-01"]
    node["gpus"] = [dict(g, mode="mps", replicas=3, team="data-science") for g in node["gpus"]]
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"]
                                       if w.get("sharing") not in ("timeslice",) and w.get("kind") != "notebook"]
    variables["gpushare_workloads"].append({"name": "small-models", "team": "data-science", "kind": "serving",
                                           "sharing": "mps", "replicas": 12})
    return build_plan(variables)


def test_mps_config_advertised_quota_and_per_pod_share():
    plan = _mps_fleet()
    node = next(n for n in plan["nodes"] if n["name"] == "l40s-01")
    assert node["device_plugin_config"]["config"]["sharing"] == {"mps": {
        "renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}}
    assert node["advertised"] == {"nvidia.com/gpu.shared": 12}           # 4 cards x 3
    team = next(t for t in plan["teams"] if t["name"] == "data-science")
    assert team["owns"]["l40s-shared nvidia.com/gpu.shared"] == 12
    for gpu in node["gpus"]:
        assert gpu["per_client"] == {"compute_percent": 33, "memory_mib": L40S_MIB // 3}
    line = next(line for line in split_table(plan) if line.startswith("l40s-01    0"))
    assert "MPS x3 -> nvidia.com/gpu.shared (each pod: 33 % of the compute, 15356 MiB)" in line


def test_time_slicing_sets_no_per_pod_limit():
    plan = build_plan(load_example("mixed-fleet"))
    node = next(n for n in plan["nodes"] if n["name"] == "l40s-01")
    assert all("per_client" not in g for g in node["gpus"])
