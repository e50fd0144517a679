# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What pruning deletes (cluster/prune.py): labelled leftovers only, never a ResourceFlavor
that the base state or a sharing window needs."""
from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import prune
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render
from inventories import load_example


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_example("four-gpu-server"))


def test_no_state_prunes_a_flavor_another_state_needs(plan):
    kept = set(prune.window_flavors(plan))
    for window in [None] + plan["windows"]:
        assert {o["metadata"]["name"] for o in render(plan, window=window)["kueue"] if o["kind"] == "ResourceFlavor"} <= kept


def test_prune_keeps_planned_window_and_only_deletes_labelled_leftovers():
    plan = build_plan(load_example("four-gpu-server"))
    wanted = render(plan)["kueue"]
    windows = prune.window_flavors(plan)
    assert windows and set(windows) <= {o["metadata"]["name"] for o in wanted if o["kind"] == "ResourceFlavor"}
    results = [
        {"item": {"kind": "ResourceFlavor", "api_version": "kueue.x-k8s.io/v1beta2"},
         "resources": [{"metadata": {"name": n}} for n in windows + ["old-flavor"]]},
        {"item": {"kind": "ClusterQueue", "api_version": "kueue.x-k8s.io/v1beta2"},
         "resources": [{"metadata": {"name": "production"}}, {"metadata": {"name": "gone-team"}}]},
        {"item": {"kind": "LocalQueue", "api_version": "kueue.x-k8s.io/v1beta2"},
         "resources": [{"metadata": {"name": "training", "namespace": "training"}},
                       {"metadata": {"name": "training", "namespace": "elsewhere"}}]},
    ]
    # a flavor only a window names is kept even when the current plan lacks it
    plan_only_now = [o for o in wanted if not (o["kind"] == "ResourceFlavor" and o["metadata"]["name"] in windows)]
    doomed = prune.prune_candidates(results, plan_only_now, windows)
    assert sorted(prune.object_key(o) for o in doomed) == [
        "ClusterQueue//gone-team", "LocalQueue/elsewhere/training", "ResourceFlavor//old-flavor"]
    assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta2" for o in doomed)


def test_unmanaged():
    plan = build_plan(load_example("mixed-fleet"))
    objects = render(plan)["kueue"] + render(plan)["namespaces"]
    assert prune.unmanaged(objects) == []
    assert prune.unmanaged([{"kind": "Cohort", "metadata": {"name": "x"}}]) == ["Cohort//x"]


# What the twin's Kueue v0.19.2 showed after the MPS inventory was applied over the example
# day's (docs/twin.md, MPS): the example's ClusterQueues, holding admitted workloads, and the
# ResourceFlavors they name, kept by Kueue's finalizer with a deletion timestamp.
TERMINATING = {"deletionTimestamp": "2026-12-02T13:38:56Z", "finalizers": ["kueue.x-k8s.io/resource-in-use"]}


def _read(kind, *metas):
    return {"item": {"kind": kind, "api_version": "kueue.x-k8s.io/v1beta2"}, "resources": [{"metadata": m} for m in metas]}


def test_prune_leaves_an_object_already_being_deleted_to_its_finalizer():
    """A second run after a prune deletes nothing again (it would report a change each run
    until the workloads end)."""
    results = [_read("ClusterQueue", dict(TERMINATING, name="production"), {"name": "gone-team"}),
               _read("ResourceFlavor", dict(TERMINATING, name="h200-141gb-whole"))]
    assert [prune.object_key(o) for o in prune.prune_candidates(results, [])] == ["ClusterQueue//gone-team"]
