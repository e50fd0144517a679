# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``mode: mig-dynamic`` where the DRA driver cannot serve it is refused, each problem with the
inventory path, the value and the fix, all at once, before anything is planned (so nothing is
rendered or applied: the plan play stops on PlanInvalid). Expected paths and values are written
from the inventories below, the reasons from the driver's source (kubernetes-sigs/
dra-driver-nvidia-gpu v0.4.1: featuregates.go, nvlib.go)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory

TEAMS = [{"name": "inference", "namespaces": ["inference"]}, {"name": "research"}]
DYNAMIC = {"gpu_model": "h200", "gpu_count": 2, "dra": True,
           "gpus": [{"index": 0, "mode": "mig-dynamic", "team": "inference"},
                    {"index": 1, "mode": "mig-dynamic", "team": "research"}]}


def inventory(**nodes) -> dict:
    return {"gpushare_teams": copy.deepcopy(TEAMS), "gpushare_policy": {},
            "gpushare_nodes": {host: copy.deepcopy(node) for host, node in nodes.items()},
            "gpushare_workloads": [{"name": "chat", "team": "inference", "kind": "serving",
                                    "sharing": "mig-dynamic", "memory_gib": 30}]}


def problems(variables) -> dict:
    with pytest.raises(PlanInvalid) as caught:
        load_inventory(variables)
    return {p.path: p for p in caught.value.problems}


def test_a_valid_dynamic_server_is_read():
    inv = load_inventory(inventory(dyn=DYNAMIC))
    assert [g.mode for g in inv.nodes[0].gpus] == ["mig-dynamic", "mig-dynamic"]
    assert inv.workloads[0].sharing == "mig-dynamic"


def test_dynamic_mode_on_a_card_without_mig():
    node = dict(DYNAMIC, gpu_model="l40s")
    found = problems(inventory(l40s=node))
    p = found["hostvars[l40s].gpushare_node.gpus[0].mode"]
    assert p.value == "mig-dynamic" and "no MIG" in p.message and p.allowed


def test_dynamic_mode_on_ampere_needs_a_reset_the_driver_never_does():
    node = dict(DYNAMIC, gpu_model="a100-80gb")
    p = problems(inventory(a100=node))["hostvars[a100].gpushare_node.gpus[0].mode"]
    assert p.value == "mig-dynamic" and "Ampere" in p.message and "mode: mig" in p.hint


def test_dynamic_gpus_need_a_dra_server():
    node = dict(DYNAMIC, dra=False)
    p = problems(inventory(dyn=node))["hostvars[dyn].gpushare_node.dra"]
    assert p.value is False and "dra: true" in p.hint


def test_dynamic_mig_next_to_mps_on_one_server():
    node = dict(DYNAMIC, gpu_count=3, gpus=DYNAMIC["gpus"] + [{"index": 2, "mode": "mps", "team": "research",
                                                               "replicas": 4}])
    found = problems(inventory(dyn=node))
    p = found["hostvars[dyn].gpushare_node.gpus"]
    assert "MPSSupport" in "".join(q.message for q in found.values() if q.path == p.path)


def test_every_gpu_of_a_dra_server_is_dynamic_once_one_is():
    """DynamicMIG is one gate of the whole driver: a whole H200 on another DRA server would be
    offered as MIG slices too."""
    other = {"gpu_model": "h200", "gpu_count": 1, "dra": True, "gpus": [{"index": 0, "mode": "whole", "team": "research"}]}
    p = problems(inventory(dyn=DYNAMIC, other=other))["hostvars[other].gpushare_node.gpus[0].mode"]
    assert p.value == "whole" and "mig-dynamic" in p.allowed and "dra: false" in p.hint


def test_a_window_on_a_dynamic_gpu():
    node = copy.deepcopy(DYNAMIC)
    node["gpus"][0]["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole"}]
    p = problems(inventory(dyn=node))["hostvars[dyn].gpushare_node.gpus[0].schedule[0]"]
    assert p.value == "whole" and "Remove the window" in p.hint


def test_all_problems_at_once():
    found = problems(inventory(l40s=dict(DYNAMIC, gpu_model="l40s"), nodra=dict(DYNAMIC, dra=False)))
    assert {"hostvars[l40s].gpushare_node.gpus[0].mode", "hostvars[l40s].gpushare_node.gpus[1].mode",
            "hostvars[nodra].gpushare_node.dra"} <= set(found)


def test_dynamic_mode_on_a_model_whose_driver_counters_are_unknown():
    """An H100 80GB is Hopper, but the collection has not read the memory counter the driver
    publishes for its profiles, so its quotas could not be sized."""
    node = dict(DYNAMIC, gpu_model="h100-80gb")
    p = problems(inventory(h100=node))["hostvars[h100].gpushare_node.gpus[0].mode"]
    assert p.value == "mig-dynamic" and "h200-141gb" in p.allowed and "DRIVER_MEMORY_MIB" in p.hint
