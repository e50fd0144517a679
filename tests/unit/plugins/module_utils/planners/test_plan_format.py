# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's keys are exactly those docs/plan-format.md lists.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import ROOT, load_example


# --------------------------------------------------------------------------- the plan's keys

# Written out from docs/plan-format.md (the format roles, renderers and the plan module read),
# not from plan.py: a renamed key is a plan no consumer can read.
TOP = {"format", "cluster", "teams", "nodes", "workloads", "kueue", "dra", "windows", "admission", "warnings",
       "mig_solve"}


CLUSTER = {"name", "kubernetes_distribution", "cohort", "mig_leftover", "cpu_memory_quota", "allow_disruption",
           "timezone", "kubernetes"}


NODE = {"name", "model", "product", "gpu_count", "host_driver", "dra", "cpus", "memory_gib", "labels", "gpus",
        "mig_config", "device_plugin_config", "sharing", "advertised"}


GPU = {"index", "declared_mode", "mode", "team", "mig"}


WINDOW = {"name", "from", "until", "gpus", "nodes", "kueue", "mig_solve"}


TEAM = {"name", "namespaces", "priority", "production", "lend", "borrow", "borrowing_limit", "lending_limit",
        "members", "cluster_queue", "local_queue", "pod_security", "owns"}


WORKLOAD = {"name", "team", "kind", "sharing", "replicas", "gpus_per_replica", "memory_gib", "queue"}


def test_the_plan_has_the_keys_of_docs_plan_format():
    planned = plan.build_plan(load_example("four-gpu-server"))
    doc = (ROOT / "docs" / "plan-format.md").read_text()
    for key in TOP | CLUSTER | NODE | GPU | WINDOW | TEAM | WORKLOAD | {"claim_templates", "realised_as", "resource"}:
        assert "`%s`" % key in doc or "`%s[]`" % key in doc, key   # the lists above are the document's
    assert set(planned) == TOP
    assert set(planned["cluster"]) == CLUSTER
    assert set(planned["dra"]) == {"claim_templates", "nodes", "feature_gates", "dynamic_mig"}
    assert all(set(team) == TEAM for team in planned["teams"])
    assert {w["name"]: set(w) for w in planned["workloads"]} == {
        w["name"]: WORKLOAD | ({"slices"} if w["sharing"] == "mig" else set()) for w in planned["workloads"]}
    node = planned["nodes"][0]
    assert set(node) == NODE
    whole, cut, time_sliced = (next(g for g in node["gpus"] if g["index"] == i) for i in (0, 1, 2))
    assert set(whole) == GPU | {"resource"} and set(cut) == GPU
    assert set(time_sliced) == GPU | {"replicas", "resource", "realised_as"}
    (night,) = planned["windows"]
    assert set(night) == WINDOW
    # gpus[]: node, index, mode, team; the window lends GPU 2 whole and names no team: the GPU's own.
    assert night["gpus"] == [{"node": "gpu01", "index": 2, "mode": "whole", "team": "data-science"}]
    # kueue.objects: ResourceFlavors, Cohort and ClusterQueues as they are inside the window.
    assert {o["kind"] for o in night["kueue"]["objects"]} == {"ResourceFlavor", "Cohort", "ClusterQueue"}
    # Config names of the window's nodes are suffixed -<window>.
    assert night["nodes"][0]["device_plugin_config"]["name"] == "gpushare-gpu01-night"
    assert planned["nodes"][0]["device_plugin_config"]["name"] == "gpushare-gpu01"
