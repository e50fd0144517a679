# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device plugin's migStrategy is decided in one place (sharing_planner.mig_strategy):
each node's config, the default config for nodes the Plan does not know and the ClusterPolicy's
mig.strategy all come from it and agree, in the base state and in every sharing window."""

from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_helm
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import sharing_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.names import DEVICE_PLUGIN_CONFIGMAP
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render

from inventories import EXAMPLE_NAMES, example_day, load_example

from inventories import ROOT  # noqa: E402


def node_states(plan: dict) -> list[dict]:
    return plan["nodes"] + [n for w in plan["windows"] for n in w["nodes"]]


def default_device_plugin_strategy(plan: dict) -> str:
    """migStrategy of the ``default`` key of the device-plugin ConfigMap the gpu_operator role applies."""
    configmap = next(o for o in render(plan)["gpu_operator"] if o["metadata"]["name"] == DEVICE_PLUGIN_CONFIGMAP)
    return yaml.safe_load(configmap["data"]["default"])["flags"]["migStrategy"]


def mig_only_inside_a_window() -> dict:
    """The example day with every GPU whole, except GPU 2 time-sliced from 07:00 to 19:00:
    on an H200 next to whole cards that is a full-size MIG instance, so MIG exists only in
    the window."""
    variables = example_day()
    node = variables["gpushare_nodes"]["gpu01"]
    node["gpus"] = [{"index": 0, "mode": "whole", "team": "production"},
                    {"index": 1, "mode": "whole", "team": "production"},
                    {"index": 2, "mode": "whole", "team": "data-science",
                     "schedule": [{"name": "day", "from": "07:00", "until": "19:00",
                                   "mode": "timeslice", "replicas": 4}]},
                    {"index": 3, "mode": "whole", "team": "training"}]
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w.get("sharing") == "whole"]
    return variables


PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}
PLANS["mig-only-inside-a-window"] = build_plan(mig_only_inside_a_window())


def test_the_decision():
    assert sharing_planner.mig_strategy(True) == "mixed"
    assert sharing_planner.mig_strategy(False) == "none"
    assert sharing_planner.has_mig([{"mig": None}, {"mig": {"profiles": {"1g.18gb": 7}}}])
    assert not sharing_planner.has_mig([{"mig": None}, {"mig": None}])


def test_the_window_case_has_mig_only_in_its_window():
    plan = PLANS["mig-only-inside-a-window"]
    assert not any(sharing_planner.has_mig(n["gpus"]) for n in plan["nodes"])
    assert any(sharing_planner.has_mig(n["gpus"]) for w in plan["windows"] for n in w["nodes"])


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_consumer_agrees_with_the_one_decision(name):
    plan = PLANS[name]
    cluster = sharing_planner.cluster_mig_strategy(node_states(plan))
    # mixed exactly when some GPU of some state is in MIG mode (k8s-device-plugin "MIG strategies")
    assert cluster == ("mixed" if any(g["mig"] for n in node_states(plan) for g in n["gpus"]) else "none")
    assert render_helm.gpu_operator_values(plan)["mig"]["strategy"] == cluster
    assert default_device_plugin_strategy(plan) == cluster
    for node in node_states(plan):
        if node["device_plugin_config"]:
            assert node["device_plugin_config"]["config"]["flags"]["migStrategy"] == \
                sharing_planner.mig_strategy(sharing_planner.has_mig(node["gpus"])), node["name"]


def test_expected_strategies_of_the_examples():
    assert {name: sharing_planner.cluster_mig_strategy(node_states(plan)) for name, plan in PLANS.items()} == {
        "four-gpu-server": "mixed", "mixed-fleet": "mixed", "microk8s-lab": "none",
        "mig-only-inside-a-window": "mixed",
        # h200-static's GPU 0 is cut by the MIG Manager; h200-dynamic has no device plugin at all.
        "static-and-dynamic-mig": "mixed"}


def test_no_other_module_decides_it():
    """Only sharing_planner.py writes the strategy values; everything else calls it."""
    decides = re.compile(r"""["'](mixed|single)["']""")
    found = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "plugins").rglob("*.py"))
             if path.name != "sharing_planner.py" and decides.search(path.read_text())]
    assert not found, "migStrategy values written outside sharing_planner.py: %s" % found
