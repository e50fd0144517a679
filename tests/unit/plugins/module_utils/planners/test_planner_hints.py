# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's answers to a DRA request and to memory in GiB (issue 33 item 3): a DRA
workload without any DRA server gets the cause alone, not first two messages about whole
GPUs; memory is answered in GiB, the unit of memory_gib and min_memory_gib, with the usable
memory of a pinned MIG profile. Each expected message is written out here in full.

Figures by hand: an A100 80GB's 1g.10gb holds 9.5 GiB (9728 MiB, `nvidia-smi mig -lgip`,
NVIDIA MIG User Guide), its 7g.80gb 79 GiB (80896 MiB); an H200 has 143771 MiB = 140.4 GiB
(NVML memory.total)."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day


def problems(variables: dict) -> list[str]:
    with pytest.raises(PlanInvalid) as caught:
        build_plan(variables)
    return [str(p) for p in caught.value.problems]


def test_a_dra_request_without_a_dra_server_gets_the_cause_alone():
    v = example_day()
    v["gpushare_workloads"].append({"name": "by-attributes", "team": "training", "kind": "training",
                                    "device_request": {"min_memory_gib": 40}})
    assert problems(v) == [
        "gpushare_workloads: a workload asks for a GPU by attributes (DRA) but no server has dra: true "
        "(got ['by-attributes']); allowed: a server with dra: true. Set gpushare_node.dra: true on the servers "
        "the DRA driver should serve"]


def test_a_dra_request_larger_than_any_dra_gpu_is_answered_in_gib():
    v = example_day()
    node = v["gpushare_nodes"]["gpu01"]
    node["dra"] = True
    node["gpus"] = [{"index": i, "mode": "whole"} for i in range(4)]
    v["gpushare_workloads"] = [{"name": "by-attributes", "team": "training", "kind": "training",
                                "device_request": {"min_memory_gib": 150}}]
    assert problems(v) == [
        "gpushare_workloads[0].device_request.min_memory_gib: no GPU on a DRA node has that much memory "
        "(largest: 140.4 GiB) (got 150.0); allowed: at most 140.4 GiB. Set dra: true on a server with bigger GPUs"]


def test_ten_gib_on_a_pinned_1g_10gb_says_what_the_profile_holds_in_gib():
    v = example_day()
    v["gpushare_nodes"] = {"gpu01": {"gpu_model": "a100-80gb", "gpu_count": 1,
                                     "gpus": [{"index": 0, "mode": "mig", "team": "production"}]}}
    v["gpushare_workloads"] = [{"name": "small", "team": "production", "kind": "serving", "sharing": "mig",
                                "memory_gib": 10, "mig_profile": "1g.10gb"}]
    assert problems(v) == [
        "gpushare_workloads: no GPU that may be cut with MIG has a slice that holds these replicas:\n"
        "  - 1 replica(s) of small need 1g.10gb with at least 10 GiB on a100-80gb (1g.10gb holds 9.5 GiB on a100-80gb)\n"
        "  - a100-80gb: 1 GPU(s) free for MIG (+ fixed layouts none); largest slice 79 GiB; per GPU at most "
        "7 x 1g.10gb, 4 x 1g.20gb, 3 x 2g.20gb, 2 x 3g.40gb, 1 x 4g.40gb, 1 x 7g.80gb\n"
        "  Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model); "
        "allowed: MIG services that fit the MIG and auto GPUs"]
