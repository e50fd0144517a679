# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods hold a GPU, and which of them a MIG change between two states of the Plan can
disturb (cluster/pods.py)."""
from __future__ import annotations

import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import pods
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from inventories import example_mig_configs, load_example

DAY, NIGHT = example_mig_configs(build_plan(load_example("four-gpu-server")))


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_example("four-gpu-server"))


def test_gpu_pods():
    listed = [
        {"metadata": {"namespace": "prod-serving", "name": "vllm"}, "status": {"phase": "Running"},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        {"metadata": {"namespace": "prod-serving", "name": "mig"}, "status": {"phase": "Pending"},
         "spec": {"containers": [{"resources": {"requests": {"nvidia.com/mig-1g.18gb": 1}}}]}},
        {"metadata": {"namespace": "research", "name": "dra"}, "status": {"phase": "Running"},
         "spec": {"containers": [{}], "resourceClaims": [{"name": "gpu"}]}},
        {"metadata": {"namespace": "research", "name": "done"}, "status": {"phase": "Succeeded"},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        {"metadata": {"namespace": "gpu-operator", "name": "dcgm"}, "status": {"phase": "Running"},
         "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        {"metadata": {"namespace": "web", "name": "cpu"}, "status": {"phase": "Running"},
         "spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}},
    ]
    assert pods.gpu_pods(listed, ["gpu-operator"]) == ["prod-serving/vllm", "prod-serving/mig", "research/dra"]


def _pod(name, resources, started, phase="Running"):
    return {"metadata": {"namespace": "t", "name": name, "creationTimestamp": started},
            "status": {"phase": phase, "startTime": started},
            "spec": {"containers": [{"resources": {"limits": dict.fromkeys(resources, "1")}}]}}


def test_only_pods_that_can_hold_a_re_partitioned_gpu_are_in_the_way(plan):
    # Day -> night re-partitions GPU 2 only, which serves the notebooks' shared resource.
    listed = [_pod("vllm", ["nvidia.com/gpu"], "2026-12-01T08:00:00Z"),
              _pod("mig", ["nvidia.com/mig-1g.18gb"], "2026-12-01T09:30:00Z"),
              _pod("notebook", ["nvidia.com/mig-7g.141gb.shared"], "2026-12-01T10:00:00Z"),
              _pod("done", ["nvidia.com/mig-7g.141gb.shared"], "2026-12-01T10:00:00Z", phase="Succeeded")]
    assert pods.pods_on_changing_gpus(listed, plan, "gpu01", DAY, NIGHT) == ["t/notebook"]
    # Night -> day re-partitions GPU 2 again, which serves nvidia.com/gpu at night: a whole-GPU
    # pod that started before GPU 2 went whole cannot be on it; one started after can.
    since = pods.gpu_layout_since(plan, "gpu01", DAY, NIGHT, None, "2026-12-01T19:00:00Z")
    assert json.loads(since) == {"2": "2026-12-01T19:00:00Z"}
    night_pods = [listed[0], _pod("fine-tune", ["nvidia.com/gpu"], "2026-12-01T19:01:00Z")]
    assert pods.pods_on_changing_gpus(night_pods, plan, "gpu01", NIGHT, DAY, since) == ["t/fine-tune"]
    # Without the record, any pod asking for what GPU 2 serves counts.
    assert pods.pods_on_changing_gpus(night_pods, plan, "gpu01", NIGHT, DAY) == ["t/vllm", "t/fine-tune"]


def test_from_a_layout_outside_the_plan_every_gpu_pod_counts(plan):
    listed = [_pod("vllm", ["nvidia.com/gpu"], "2026-12-01T08:00:00Z"), _pod("cpu", [], "2026-12-01T08:00:00Z")]
    assert pods.pods_on_changing_gpus(listed, plan, "gpu01", "all-disabled", DAY) == ["t/vllm"]
    since = json.loads(pods.gpu_layout_since(plan, "gpu01", "all-disabled", DAY, '{"2": "x"}', "T"))
    assert since == {"0": "T", "1": "T", "2": "T", "3": "T"}


def test_on_day_two_the_live_config_tells_which_gpus_change(plan):
    """An edit re-cuts GPU 1 only (the classifier removed, no leftover carved): its new layout
    has a new config name, so the old one is no state of the new plan, and the MIG configs read
    from the cluster before the apply say what GPU 1 and the others were."""
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] != "classifier"]
    variables["gpushare_policy"]["mig_leftover"] = "leave"
    edited = build_plan(variables)
    old, new = plan["nodes"][0], edited["nodes"][0]
    assert [g["index"] for g, h in zip(old["gpus"], new["gpus"]) if g["mig"] != h["mig"]] == [1]
    live = {old["mig_config"]["name"]: old["mig_config"]["config"]}
    listed = [_pod("vllm", ["nvidia.com/gpu"], "2026-12-01T08:00:00Z"),
              _pod("mig", ["nvidia.com/mig-1g.18gb"], "2026-12-01T09:30:00Z"),
              _pod("notebook", ["nvidia.com/mig-7g.141gb.shared"], "2026-12-01T10:00:00Z")]
    args = (listed, edited, "gpu01", old["mig_config"]["name"], new["mig_config"]["name"])
    assert pods.pods_on_changing_gpus(*args, live_configs=live) == ["t/mig"]
    # Without the live configs which GPUs change is unknown: every GPU pod counts.
    assert pods.pods_on_changing_gpus(*args) == ["t/vllm", "t/mig", "t/notebook"]
    since = json.loads(pods.gpu_layout_since(edited, "gpu01", old["mig_config"]["name"], new["mig_config"]["name"],
                                             None, "T", live_configs=live))
    assert since == {"1": "T"}
