# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventories the planner refuses, each worked out by hand: the problem is reported at the
inventory path of the bad value, with the value and what is allowed (pinned profiles and models
no GPU offers, pods wider than any server, DRA requests no DRA GPU holds, MPS beside MIG, more
MIG or time-sliced demand than the GPUs hold, borrowing and lending limits), every problem at
once.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import ROOT, load_dir, load_example
from plan_cases import embeddings_entry, pinned_to_the_whole_card, plan_problems


# --------------------------------------------------------------------------- which GPUs may carry a MIG slice


def test_a_service_pinned_to_a_profile_of_a_fixed_layout_gets_it_and_to_another_profile_is_refused():
    # GPU 1 is the example's only MIG GPU; its layout fixed as the example's comment suggests.
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1]["mig_layout"] = {"3g.71gb": 1, "2g.35gb": 1, "1g.18gb": 2}
    index, embeddings = embeddings_entry(variables)
    embeddings["mig_profile"] = "3g.71gb"
    planned = plan.build_plan(variables)
    assert [s["profile"] for s in next(w for w in planned["workloads"] if w["name"] == "embeddings")["slices"]] == [
        "3g.71gb"]
    # 4g.71gb is not in the fixed layout and no other GPU may be cut: the service is refused as
    # having no GPU (at its sharing), not as a shortfall of the whole MIG programme.
    embeddings["mig_profile"] = "4g.71gb"
    p = plan_problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert "service embeddings needs a MIG slice 4g.71gb, but no h200-141gb GPU may be cut with MIG" in p.message


def test_a_service_pinned_to_the_full_instance_a_neighbour_time_slices_has_no_gpu():
    variables = pinned_to_the_whole_card("timeslice")
    index = embeddings_entry(variables)[0]
    p = plan_problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert "gpu01 GPU 1 (auto)" in p.allowed


def test_a_service_pinned_to_a_model_with_no_gpu_that_may_be_cut_is_refused_at_its_gpu_model():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "whole", "team": "production"}
    index, embeddings = embeddings_entry(variables)
    embeddings.update(gpu_model="h200", mig_profile="3g.71gb")
    p = plan_problems(variables)["gpushare_workloads[%d].gpu_model" % index]
    assert p.message == "service embeddings needs a MIG slice 3g.71gb, but no h200-141gb GPU may be cut with MIG"
    assert p.value == "h200-141gb"
    assert p.allowed == ("GPUs that could become MIG GPUs: gpu01 GPU 0 (whole), gpu01 GPU 1 (whole), "
                         "gpu01 GPU 2 (timeslice), gpu01 GPU 3 (whole)")


def test_a_service_on_any_model_names_every_mig_model_of_the_fleet():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "whole", "team": "production"}
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    index = embeddings_entry(variables)[0]
    p = plan_problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert p.message == "service embeddings needs a MIG slice, but no a100-80gb or h200-141gb GPU may be cut with MIG"
    assert p.value == "mig" and "a100 GPU 0 (whole)" in p.allowed


# --------------------------------------------------------------------------- what can never run

def test_a_pod_wider_than_any_server_is_refused_with_the_widest():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append(
        {"name": "wide", "team": "training", "kind": "training", "sharing": "whole", "gpus": 3})
    # gpu01 keeps GPUs 0 and 3 whole (1 is cut, 2 time-sliced): 2 whole GPUs on the widest server.
    p = plan_problems(variables)["gpushare_workloads[%d].gpus" % (len(variables["gpushare_workloads"]) - 1)]
    assert p.message == "needs 3 whole GPUs on one server; the most any server has is 2"
    assert (p.value, p.allowed) == (3, "at most 2")


def test_a_pod_pinned_to_a_model_counts_only_that_models_servers():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    variables["gpushare_workloads"].append({"name": "pair", "team": "training", "kind": "training", "sharing": "whole",
                                            "gpus": 2, "gpu_model": "a100-80gb"})
    p = plan_problems(variables)["gpushare_workloads[%d].gpus" % (len(variables["gpushare_workloads"]) - 1)]
    assert p.message == "needs 2 whole GPUs on one server; the most any server has is 1"


def test_a_dra_workload_without_a_dra_server_gets_the_cause_alone():
    """Not first "needs 1 whole GPUs ... the most any DRA server has is 0" (issue 33 item 3)."""
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "by-attributes", "team": "training", "kind": "training",
                                            "sharing": "dra"})
    found = plan_problems(variables)
    assert list(found) == ["gpushare_workloads"]
    assert "no server has dra: true" in found["gpushare_workloads"].message


def test_a_dra_workload_asking_for_more_memory_than_any_dra_gpu_has():
    variables = load_example("mixed-fleet")
    index, w = next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if w["name"] == "long-context-eval")
    w["device_request"]["min_memory_gib"] = 200
    p = plan_problems(variables)["gpushare_workloads[%d].device_request.min_memory_gib" % index]
    # The DRA server's H200 reports 143771 MiB (nvidia-smi; docs/gpu-facts.md): 143771 / 1024 = 140.40 GiB,
    # said in GiB as min_memory_gib is written.
    assert p.message == "no GPU on a DRA node has that much memory (largest: 140.4 GiB)"
    assert (p.value, p.allowed) == (200, "at most 140.4 GiB")


def test_mps_beside_a_mig_gpu_is_refused_with_the_value_and_what_is_allowed():
    variables = load_dir(ROOT / "tests" / "twin" / "inventory-mps")
    variables["gpushare_nodes"]["gpu01"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192, "memory_gib": 2048,
                                            "gpus": [{"index": 0, "mode": "mig", "team": "mps-inference",
                                                      "mig_layout": {"7g.141gb": 1}}]}
    p = plan_problems(variables)["hostvars[mps-l40s-01].gpushare_node.gpus"]
    assert p.message.startswith("MPS cannot run in a cluster with MIG slices (on gpu01)")
    assert (p.value, p.allowed) == ("mps", "MPS where no GPU of the cluster is cut by MIG (in every window too)")


def test_a_service_pinned_to_a_model_whose_gpus_stay_whole_is_refused_although_another_model_is_cut():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    index, embeddings = embeddings_entry(variables)
    embeddings["gpu_model"] = "a100-80gb"      # gpu01's GPU 1 is cut, but it is an H200
    p = plan_problems(variables)["gpushare_workloads[%d].gpu_model" % index]
    assert p.message == "service embeddings needs a MIG slice, but no a100-80gb GPU may be cut with MIG"


def test_a_misspelt_variable_is_named_when_planning_against_the_previous_plan():
    variables = load_example("four-gpu-server")
    with pytest.raises(PlanInvalid) as refused:
        # gpushare_nodes is gathered from the hosts' gpushare_node, not defined by that name.
        plan.plan_and_changes(variables, None, [v for v in variables if v != "gpushare_nodes"] + ["gpushare_workload"])
    assert [p.path for p in refused.value.problems] == ["gpushare_workload"]


# --------------------------------------------------------------------------- every MIG service's problem

def _fleet_with_a100_and_l40s():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    variables["gpushare_nodes"]["l40s"] = {"gpu_model": "l40s", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    return variables


def _services_indexed(variables, *names):
    return [(i, w) for i, w in enumerate(variables["gpushare_workloads"]) if w["name"] in names]


def _pin_services(variables, **pin):
    """Sets ``pin`` on the example's two MIG services; returns them with their inventory index."""
    pinned = _services_indexed(variables, "embeddings", "classifier")
    for _i, w in pinned:
        w.update(pin)
    return pinned


def test_every_service_pinned_to_a_card_without_mig_is_reported():
    variables = _fleet_with_a100_and_l40s()
    pinned = _pin_services(variables, gpu_model="l40s")
    found = plan_problems(variables)
    for i, w in pinned:
        p = found["gpushare_workloads[%d].gpu_model" % i]
        assert p.message == "l40s has no MIG, and service %s needs a MIG slice" % w["name"]
        assert (p.value, p.allowed) == ("l40s", "a MIG-capable model of the fleet: a100-80gb, h200-141gb")


def test_every_service_pinned_to_a_profile_no_model_has_is_reported():
    variables = _fleet_with_a100_and_l40s()
    pinned = _pin_services(variables, mig_profile="5g.99gb")
    found = plan_problems(variables)
    # The profiles of the MIG User Guide's A100 80GB and H200 tables, sorted.
    profiles = ("1g.10gb, 1g.10gb+me, 1g.18gb, 1g.18gb+me, 1g.20gb, 1g.35gb, 2g.20gb, 2g.35gb, 3g.40gb, 3g.71gb, "
                "4g.40gb, 4g.71gb, 7g.141gb, 7g.80gb")
    for i, _w in pinned:
        p = found["gpushare_workloads[%d].mig_profile" % i]
        assert p.message == "is not a MIG profile of a100-80gb, h200-141gb"
        assert (p.value, p.allowed) == ("5g.99gb", profiles)


def test_every_mig_service_of_a_fleet_without_mig_is_reported():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"] = {"l40s": {"gpu_model": "l40s", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                            "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}}
    found = plan_problems(variables)
    for i, _w in _services_indexed(variables, "embeddings", "classifier", "speech-to-text"):
        p = found["gpushare_workloads[%d].sharing" % i]
        assert p.message == "needs a MIG-capable GPU, and the inventory has none"
        assert (p.value, p.allowed) == ("mig", "whole, timeslice") and p.hint
    # Pinned to the L40S itself: no MIG-capable model to suggest.
    _i, embeddings = embeddings_entry(variables)
    embeddings["gpu_model"] = "l40s"
    p = plan_problems(variables)["gpushare_workloads[%d].gpu_model" % _i]
    assert p.allowed == "a MIG-capable model of the fleet: none"


def test_a_problem_inside_a_window_keeps_its_value():
    gpus = [{"index": 0, "mode": "whole", "team": "training",
             "schedule": [{"name": "day", "from": "07:00", "until": "19:00", "mode": "mig"}]}]
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"] = []
    variables["gpushare_nodes"] = {"l40s": {"gpu_model": "l40s", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                            "gpus": gpus}}
    p = plan_problems(variables)["hostvars[l40s].gpushare_node.gpus[0].schedule[0].mode"]
    assert p.message.startswith("inside sharing window day: ") and p.value == "mig"


def test_more_mig_services_than_the_mig_gpus_hold_is_one_problem_of_the_workloads():
    variables = load_example("four-gpu-server")
    _i, embeddings = embeddings_entry(variables)
    # 8 replicas of 12 GiB need 8 instances of at least one compute slice each: an H200 has 7.
    embeddings["replicas"] = 8
    p = plan_problems(variables)["gpushare_workloads"]
    assert p.allowed == "MIG services that fit the MIG and auto GPUs" and p.hint


def test_proportional_cpu_and_memory_quota_needs_every_servers_cpus_and_memory():
    variables = load_example("four-gpu-server")
    variables["gpushare_policy"]["cpu_memory_quota"] = "proportional"
    del variables["gpushare_nodes"]["gpu01"]["cpus"]
    variables["gpushare_nodes"]["gpu02"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192,
                                            "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    found = plan_problems(variables)
    p = found["hostvars[gpu01].gpushare_node.cpus"]
    assert p.message == "is required when gpushare_policy.cpu_memory_quota is proportional"
    assert p.allowed == "the server's CPU count"
    assert found["hostvars[gpu02].gpushare_node.memory_gib"].allowed == "the server's memory in GiB"


def test_a_team_that_does_not_borrow_is_checked_per_pinned_model_too():
    # production (borrow: false) owns GPU 0 (H200) and now an A100; vllm-chat alone, pinned to the
    # A100 with 2 replicas: 2 whole GPUs in all is what it owns, but on a100-80gb it owns 1.
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "production"}]}
    variables["gpushare_workloads"] = [{"name": "vllm-chat", "team": "production", "kind": "serving",
                                        "sharing": "whole", "replicas": 2, "gpu_model": "a100-80gb"}]
    p = plan_problems(variables)["gpushare_teams[0]"]
    assert p.message == ("team production's workloads want 2 whole GPUs on a100-80gb but it owns 1 and does not "
                         "borrow (borrow: false)")


# --------------------------------------------------------------------------- demand against what exists

def test_dra_memory_exactly_the_largest_dra_gpus_is_enough_and_more_is_refused():
    variables = load_dir(ROOT / "inventory-examples" / "mixed-fleet")
    index, w = next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if "device_request" in w)
    # The DRA server's H200: 143771 MiB (nvidia-smi), 143771 / 1024 GiB exactly is its whole memory.
    w["device_request"]["min_memory_gib"] = 143771 / 1024
    assert plan.build_plan(variables)["workloads"]
    w["device_request"]["min_memory_gib"] = 140.41        # 140.41 x 1024 = 143779.84 MiB > 143771
    p = plan_problems(variables)["gpushare_workloads[%d].device_request.min_memory_gib" % index]
    assert (p.message, p.value, p.allowed) == (
        "no GPU on a DRA node has that much memory (largest: 140.4 GiB)", 140.41, "at most 140.4 GiB")


def test_dra_workloads_on_a_fleet_without_a_dra_server_are_named():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "eval", "team": "training", "kind": "batch",
                                            "device_request": {"min_memory_gib": 10}})
    problems = plan_problems(variables)
    none = problems["gpushare_workloads"]
    assert (none.message, none.value, none.allowed, none.hint) == (
        "a workload asks for a GPU by attributes (DRA) but no server has dra: true", ["eval"],
        "a server with dra: true", "Set gpushare_node.dra: true on the servers the DRA driver should serve")
    # The cause alone: no message about the memory of DRA GPUs that do not exist.
    assert list(problems) == ["gpushare_workloads"]


def test_time_sliced_replicas_of_all_workloads_add_up_against_the_time_sliced_gpus():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "sweeps", "team": "data-science", "kind": "batch",
                                            "sharing": "timeslice", "replicas": 3})
    # GPU 2 gives 5 replicas; the notebooks want 5 and the sweeps 3: 8 > 5.
    p = plan_problems(variables)["gpushare_workloads"]
    assert (p.message, p.value, p.allowed, p.hint) == (
        "8 timeslice replicas are wanted but the timeslice GPUs provide 5", 8, "at most 5",
        "Add GPUs with mode timeslice or raise their replicas")


def test_a_lending_limit_may_equal_the_whole_gpus_the_team_owns_but_not_exceed_them():
    variables = load_example("four-gpu-server")
    production = variables["gpushare_teams"][0]
    production["lending_limit"] = 1         # production owns one whole GPU (0); GPU 1 is MIG
    assert plan.build_plan(variables)["teams"]
    production["lending_limit"] = 2
    p = plan_problems(variables)["gpushare_teams[0].lending_limit"]
    assert (p.value, p.allowed) == (2, "0..1")
