# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who gets the GPUs no team owns, worked out by hand (plan._assign_whole_gpus' rule: one GPU
at a time, in GPU order, to the serving team with the largest shortfall of whole GPUs, ties
by name). Kills plan.py mutants that survived `make mutation` (docs/testing.md, "Mutation
testing")."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import ROOT, load_dir, load_example


def test_unowned_whole_gpus_go_one_at_a_time_to_the_team_shortest_of_gpus():
    variables = load_example("four-gpu-server")
    node = variables["gpushare_nodes"]["gpu01"]
    node["gpus"] = [{"index": 0, "mode": "whole", "team": "production"}] + [
        {"index": i, "mode": "whole"} for i in (1, 2, 3)]
    variables["gpushare_workloads"] = [
        {"name": "chat", "team": "production", "kind": "serving", "sharing": "whole", "replicas": 3},
        {"name": "big", "team": "training", "kind": "serving", "sharing": "whole", "replicas": 1, "gpus": 2},
        {"name": "fine-tune", "team": "data-science", "kind": "training", "sharing": "whole", "replicas": 4}]
    owners = plan._assign_whole_gpus(load_inventory(variables), {})
    # Short: production 3 - 1 owned = 2, training 2 (data-science's training is not serving).
    # GPU 1: tie at 2 -> production (by name), now 1; GPU 2: training (2), now 1; GPU 3: tie at 1 -> production.
    assert {index: team for (_node, index), team in owners.items()} == {
        0: "production", 1: "production", 2: "training", 3: "production"}


def _pinned_to_the_whole_card(neighbour_mode):
    variables = load_example("four-gpu-server")
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    gpus[1]["mode"] = "auto"
    gpus[2] = {"index": 2, "mode": neighbour_mode, "team": "data-science",
               **({"replicas": 5} if neighbour_mode == "timeslice" else {})}
    # embeddings alone on MIG, pinned to the whole-card instance (the notebooks only where a card is sliced).
    dropped = ("classifier", "speech-to-text") + (() if neighbour_mode == "timeslice" else ("notebooks",))
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] not in dropped]
    for w in variables["gpushare_workloads"]:
        if w["name"] == "embeddings":
            w["mig_profile"] = "7g.141gb"
    return variables


def test_an_auto_gpu_never_gets_the_full_instance_a_neighbour_time_slices():
    # GPU 2 is time-sliced through a 7g.141gb instance: the device plugin time-slices by resource name
    # (k8s-device-plugin README), so a 7g.141gb on the auto GPU 1 would be time-sliced as well: refused.
    with pytest.raises(PlanInvalid) as refused:
        plan.build_plan(_pinned_to_the_whole_card("timeslice"))
    assert "embeddings" in str(refused.value)
    # The same pin with a whole neighbour: the auto GPU is cut into the one 7g.141gb instance.
    planned = plan.build_plan(_pinned_to_the_whole_card("whole"))
    assert next(g for g in planned["nodes"][0]["gpus"] if g["index"] == 1)["mig"]["profiles"] == {"7g.141gb": 1}


# --------------------------------------------------------------------------- the plan's keys

# Written out from docs/plan-format.md (the format roles, renderers and the plan module read),
# not from plan.py: a renamed key is a plan no consumer can read.
TOP = {"format", "cluster", "teams", "nodes", "workloads", "kueue", "dra", "windows", "admission", "warnings",
       "mig_solve"}
CLUSTER = {"name", "kubernetes_distribution", "cohort", "mig_leftover", "cpu_memory_quota", "allow_disruption",
           "timezone"}
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
    assert set(planned["dra"]) == {"claim_templates", "nodes"}
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


def test_a_time_sliced_card_beside_mig_cards_is_one_full_instance():
    planned = plan.build_plan(load_example("four-gpu-server"))
    time_sliced = next(g for g in planned["nodes"][0]["gpus"] if g["index"] == 2)
    # MIG User Guide, H200: 7g.141gb is placed at memory slice 0 and spans all 8; its memory is
    # mig-parted#120's 139.75 GiB = 139.75 x 1024 = 143104 MiB (docs/gpu-facts.md). No service owns it.
    assert time_sliced["mig"]["slices"] == [{"profile": "7g.141gb", "start": 0, "size": 8, "memory_mib": 143104,
                                             "team": "data-science", "workload": None, "replica": None}]
    assert time_sliced["realised_as"] == "mig-full-instance"
    # An L40S has no MIG: its time-sliced cards are the full GPU (mixed-fleet's l40s-01).
    fleet = plan.build_plan(load_example("mixed-fleet"))
    l40s = next(n for n in fleet["nodes"] if n["model"] == "l40s")
    assert {g["realised_as"] for g in l40s["gpus"]} == {"full-gpu"}


def test_each_mps_client_gets_a_whole_number_share():
    variables = load_dir(ROOT / "tests" / "twin" / "inventory-mps")
    for g in variables["gpushare_nodes"]["mps-l40s-01"]["gpus"]:
        g["replicas"] = 7
    gpu = plan.build_plan(variables)["nodes"][0]["gpus"][0]
    # 100 % / 7 = 14 rounded down; the L40S's 46068 MiB / 7 = 6581 rounded down (7 x 6581 = 46067).
    assert gpu["per_client"] == {"compute_percent": 14, "memory_mib": 6581}


# --------------------------------------------------------------------------- windows

def test_a_window_time_slices_a_whole_gpu_for_another_team_with_its_replicas():
    variables = load_example("four-gpu-server")
    gpu3 = variables["gpushare_nodes"]["gpu01"]["gpus"][3]
    gpu3["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "timeslice",
                         "team": "data-science", "replicas": 3}]
    (night,) = plan.build_plan(variables)["windows"]
    inside = next(g for g in night["nodes"][0]["gpus"] if g["index"] == 3)
    assert (inside["mode"], inside["team"], inside["replicas"]) == ("timeslice", "data-science", 3)


def test_a_window_keeps_the_mig_layout_the_base_state_kept_from_the_previous_plan():
    # The previous plan cut GPU 1 as the example's commented-out fixed layout; re-planned stable
    # with GPU 1 auto, the base keeps that cut, and so must the night window, which does not name
    # GPU 1 (docs/sharing-windows.md: a window switch never re-partitions a GPU whose services keep
    # running), although planned afresh the GPU would be cut differently.
    previous = load_example("four-gpu-server")
    previous["gpushare_nodes"]["gpu01"]["gpus"][1]["mig_layout"] = {"3g.71gb": 1, "2g.35gb": 1, "1g.18gb": 2}
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "auto"}
    planned = plan.plan_and_changes(variables, json.dumps(plan.build_plan(previous)))[0]
    kept = {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert planned["nodes"][0]["gpus"][1]["mig"]["profiles"] == kept
    assert planned["windows"][0]["nodes"][0]["gpus"][1]["mig"]["profiles"] == kept
    assert plan.build_plan(variables)["nodes"][0]["gpus"][1]["mig"]["profiles"] != kept


def test_a_new_server_is_planned_as_not_in_mig_mode_when_re_planning_stable():
    previous = plan.build_plan(load_example("four-gpu-server"))
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu02"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192, "memory_gib": 2048,
                                            "gpus": [{"index": 0, "mode": "mig", "team": "training",
                                                      "mig_layout": {"7g.141gb": 1}}]}
    planned = plan.plan_and_changes(variables, json.dumps(previous))[0]
    new = next(n for n in planned["nodes"] if n["name"] == "gpu02")
    assert new["gpus"][0]["mig"]["profiles"] == {"7g.141gb": 1}


def test_the_plan_reports_how_the_mig_layout_was_solved():
    solve = plan.build_plan(load_example("four-gpu-server"))["mig_solve"]
    # docs/plan-format.md: exact, gap, classes and stages (mig_planner.STAGES, in that order).
    assert solve["exact"] is True and solve["gap"] == 0
    assert [s["objective"] for s in solve["stages"]] == ["auto_gpus_converted", "gpus_used", "slice_memory_mib"]


# --------------------------------------------------------------------------- which GPUs may carry a MIG slice

def _problems(variables) -> dict:
    """path -> problem; each says what is allowed and what to do (the project's rule for errors)."""
    with pytest.raises(PlanInvalid) as refused:
        plan.build_plan(variables)
    for p in refused.value.problems:
        assert p.allowed and p.hint, p
    return {p.path: p for p in refused.value.problems}


def _embeddings(variables) -> tuple[int, dict]:
    return next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if w["name"] == "embeddings")


def test_a_service_pinned_to_a_profile_of_a_fixed_layout_gets_it_and_to_another_profile_is_refused():
    # GPU 1 is the example's only MIG GPU; its layout fixed as the example's comment suggests.
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1]["mig_layout"] = {"3g.71gb": 1, "2g.35gb": 1, "1g.18gb": 2}
    index, embeddings = _embeddings(variables)
    embeddings["mig_profile"] = "3g.71gb"
    planned = plan.build_plan(variables)
    assert [s["profile"] for s in next(w for w in planned["workloads"] if w["name"] == "embeddings")["slices"]] == [
        "3g.71gb"]
    # 4g.71gb is not in the fixed layout and no other GPU may be cut: the service is refused as
    # having no GPU (at its sharing), not as a shortfall of the whole MIG programme.
    embeddings["mig_profile"] = "4g.71gb"
    p = _problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert "service embeddings needs a MIG slice 4g.71gb, but no h200-141gb GPU may be cut with MIG" in p.message


def test_a_service_pinned_to_the_full_instance_a_neighbour_time_slices_has_no_gpu():
    variables = _pinned_to_the_whole_card("timeslice")
    index = _embeddings(variables)[0]
    p = _problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert "gpu01 GPU 1 (auto)" in p.allowed


def test_auto_gpus_of_a_dra_server_are_never_cut():
    # The DRA driver serves the server's GPUs whole (docs/dra.md), so its auto GPUs are no MIG candidates.
    variables = load_example("four-gpu-server")
    node = variables["gpushare_nodes"]["gpu01"]
    node["dra"] = True
    node["gpus"] = [{"index": i, "mode": "auto"} for i in range(4)]
    # An H200 outside DRA, kept whole: the fleet has a MIG-capable model, but no GPU that may be cut.
    variables["gpushare_nodes"]["gpu02"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192, "memory_gib": 2048,
                                            "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] == "embeddings"]
    p = _problems(variables)["gpushare_workloads[0].sharing"]
    assert "gpu01 GPU 1 (auto, dra: true)" in p.allowed


def test_a_server_without_mig_listed_first_leaves_the_next_servers_mig_gpus_to_plan():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"] = {
        "gpu00": {"gpu_model": "l40s", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                  "gpus": [{"index": 0, "mode": "whole", "team": "training"}]},
        **variables["gpushare_nodes"]}
    planned = plan.build_plan(variables)
    assert [n["name"] for n in planned["nodes"]] == ["gpu00", "gpu01"]
    # Cut as in the example without the L40S server.
    alone = plan.build_plan(load_example("four-gpu-server"))
    assert alone["nodes"][0]["gpus"][1]["mig"] is not None
    assert planned["nodes"][1]["gpus"][1]["mig"] == alone["nodes"][0]["gpus"][1]["mig"]


def test_a_service_pinned_to_a_model_with_no_gpu_that_may_be_cut_is_refused_at_its_gpu_model():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "whole", "team": "production"}
    index, embeddings = _embeddings(variables)
    embeddings.update(gpu_model="h200", mig_profile="3g.71gb")
    p = _problems(variables)["gpushare_workloads[%d].gpu_model" % index]
    assert p.message == "service embeddings needs a MIG slice 3g.71gb, but no h200-141gb GPU may be cut with MIG"
    assert p.value == "h200-141gb"
    assert p.allowed == ("GPUs that could become MIG GPUs: gpu01 GPU 0 (whole), gpu01 GPU 1 (whole), "
                         "gpu01 GPU 2 (timeslice), gpu01 GPU 3 (whole)")


def test_a_service_on_any_model_names_every_mig_model_of_the_fleet():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "whole", "team": "production"}
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    index = _embeddings(variables)[0]
    p = _problems(variables)["gpushare_workloads[%d].sharing" % index]
    assert p.message == "service embeddings needs a MIG slice, but no a100-80gb or h200-141gb GPU may be cut with MIG"
    assert p.value == "mig" and "a100 GPU 0 (whole)" in p.allowed


# --------------------------------------------------------------------------- what can never run

def test_a_pod_wider_than_any_server_is_refused_with_the_widest():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append(
        {"name": "wide", "team": "training", "kind": "training", "sharing": "whole", "gpus": 3})
    # gpu01 keeps GPUs 0 and 3 whole (1 is cut, 2 time-sliced): 2 whole GPUs on the widest server.
    p = _problems(variables)["gpushare_workloads[%d].gpus" % (len(variables["gpushare_workloads"]) - 1)]
    assert p.message == "needs 3 whole GPUs on one server; the most any server has is 2"
    assert (p.value, p.allowed) == (3, "at most 2")


def test_a_pod_pinned_to_a_model_counts_only_that_models_servers():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    variables["gpushare_workloads"].append({"name": "pair", "team": "training", "kind": "training", "sharing": "whole",
                                            "gpus": 2, "gpu_model": "a100-80gb"})
    p = _problems(variables)["gpushare_workloads[%d].gpus" % (len(variables["gpushare_workloads"]) - 1)]
    assert p.message == "needs 2 whole GPUs on one server; the most any server has is 1"


def test_a_dra_workload_without_a_dra_server_has_none_wide_enough():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "by-attributes", "team": "training", "kind": "training",
                                            "sharing": "dra"})
    found = _problems(variables)
    p = found["gpushare_workloads[%d].gpus" % (len(variables["gpushare_workloads"]) - 1)]
    assert p.message == "needs 1 whole GPUs on one server; the most any DRA server has is 0"
    assert "gpushare_workloads" in found   # and no server has dra: true


def test_a_dra_workload_asking_for_more_memory_than_any_dra_gpu_has():
    variables = load_example("mixed-fleet")
    index, w = next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if w["name"] == "long-context-eval")
    w["device_request"]["min_memory_gib"] = 200
    p = _problems(variables)["gpushare_workloads[%d].device_request.min_memory_gib" % index]
    # The DRA server's H200 reports 143771 MiB (nvidia-smi; docs/gpu-facts.md): 143771 / 1024 = 140.40 GiB.
    assert p.message == "no GPU on a DRA node has that much memory (largest: 143771 MiB)"
    assert (p.value, p.allowed) == (200, "at most 140.4")


# --------------------------------------------------------------------------- what the nodes get

def test_what_the_mixed_fleets_nodes_are_configured_with():
    fleet = plan.build_plan(load_example("mixed-fleet"))
    nodes = {n["name"]: n for n in fleet["nodes"]}
    # docs/plan-format.md: a MIG-capable card with no MIG GPU gets mig-parted's `all-disabled`; the
    # device plugin runs the mixed strategy where MIG slices are advertised (k8s-device-plugin
    # README: nvidia.com/mig-<profile>) and none elsewhere; DRA servers' whole GPUs are requested
    # through the DRA resource, and only then does Kueue map the DRA device class to it.
    assert nodes["h200-01"]["mig_config"]["name"] == "all-disabled" and nodes["h200-01"]["dra"]
    assert {g["resource"] for g in nodes["h200-01"]["gpus"]} == {"gpushare.cluster/dra-gpu"}
    assert nodes["a100-01"]["device_plugin_config"]["config"]["flags"] == {"migStrategy": "mixed"}
    assert nodes["l40s-01"]["device_plugin_config"]["config"]["flags"] == {"migStrategy": "none"}
    assert "deviceClassMappings" in fleet["kueue"]["configuration"]["resources"]
    # A DRA workload names its ResourceClaimTemplate, one that dra_claims writes (docs/plan-format.md).
    (dra,) = [w for w in fleet["workloads"] if w["sharing"] == "dra"]
    assert dra["claim_template"] == "long-context-eval-gpu"
    assert dra["claim_template"] in {c["metadata"]["name"] for c in fleet["dra"]["claim_templates"]}
    day = plan.build_plan(load_example("four-gpu-server"))       # no DRA workload
    assert "deviceClassMappings" not in day["kueue"]["configuration"]["resources"]


def test_mps_beside_a_mig_gpu_is_refused_with_the_value_and_what_is_allowed():
    variables = load_dir(ROOT / "tests" / "twin" / "inventory-mps")
    variables["gpushare_nodes"]["gpu01"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192, "memory_gib": 2048,
                                            "gpus": [{"index": 0, "mode": "mig", "team": "mps-inference",
                                                      "mig_layout": {"7g.141gb": 1}}]}
    p = _problems(variables)["hostvars[mps-l40s-01].gpushare_node.gpus"]
    assert p.message.startswith("MPS cannot run in a cluster with MIG slices (on gpu01)")
    assert (p.value, p.allowed) == ("mps", "MPS where no GPU of the cluster is cut by MIG (in every window too)")


def test_a_service_pinned_to_a_model_whose_gpus_stay_whole_is_refused_although_another_model_is_cut():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    index, embeddings = _embeddings(variables)
    embeddings["gpu_model"] = "a100-80gb"      # gpu01's GPU 1 is cut, but it is an H200
    p = _problems(variables)["gpushare_workloads[%d].gpu_model" % index]
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
    found = _problems(variables)
    for i, w in pinned:
        p = found["gpushare_workloads[%d].gpu_model" % i]
        assert p.message == "l40s has no MIG, and service %s needs a MIG slice" % w["name"]
        assert (p.value, p.allowed) == ("l40s", "a MIG-capable model of the fleet: a100-80gb, h200-141gb")


def test_every_service_pinned_to_a_profile_no_model_has_is_reported():
    variables = _fleet_with_a100_and_l40s()
    pinned = _pin_services(variables, mig_profile="5g.99gb")
    found = _problems(variables)
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
    found = _problems(variables)
    for i, _w in _services_indexed(variables, "embeddings", "classifier", "speech-to-text"):
        p = found["gpushare_workloads[%d].sharing" % i]
        assert p.message == "needs a MIG-capable GPU, and the inventory has none"
        assert (p.value, p.allowed) == ("mig", "whole, timeslice") and p.hint
    # Pinned to the L40S itself: no MIG-capable model to suggest.
    _i, embeddings = _embeddings(variables)
    embeddings["gpu_model"] = "l40s"
    p = _problems(variables)["gpushare_workloads[%d].gpu_model" % _i]
    assert p.allowed == "a MIG-capable model of the fleet: none"


def test_a_problem_inside_a_window_keeps_its_value():
    gpus = [{"index": 0, "mode": "whole", "team": "training",
             "schedule": [{"name": "day", "from": "07:00", "until": "19:00", "mode": "mig"}]}]
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"] = []
    variables["gpushare_nodes"] = {"l40s": {"gpu_model": "l40s", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                            "gpus": gpus}}
    p = _problems(variables)["hostvars[l40s].gpushare_node.gpus[0].schedule[0].mode"]
    assert p.message.startswith("inside sharing window day: ") and p.value == "mig"


def test_more_mig_services_than_the_mig_gpus_hold_is_one_problem_of_the_workloads():
    variables = load_example("four-gpu-server")
    _i, embeddings = _embeddings(variables)
    # 8 replicas of 12 GiB need 8 instances of at least one compute slice each: an H200 has 7.
    embeddings["replicas"] = 8
    p = _problems(variables)["gpushare_workloads"]
    assert p.allowed == "MIG services that fit the MIG and auto GPUs" and p.hint


def test_a_declared_mig_gpu_never_gets_the_full_instance_a_neighbour_time_slices():
    variables = _pinned_to_the_whole_card("timeslice")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "mig", "team": "production"}
    index = _embeddings(variables)[0]
    assert "gpushare_workloads[%d].sharing" % index in _problems(variables)


def test_an_auto_gpus_team_owns_its_spare_slices():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "auto", "team": "training"}
    cut = plan.build_plan(variables)["nodes"][0]["gpus"][1]["mig"]["slices"]
    assert {s["team"] for s in cut if s["workload"] is None} == {"training"}


def test_proportional_cpu_and_memory_quota_needs_every_servers_cpus_and_memory():
    variables = load_example("four-gpu-server")
    variables["gpushare_policy"]["cpu_memory_quota"] = "proportional"
    del variables["gpushare_nodes"]["gpu01"]["cpus"]
    variables["gpushare_nodes"]["gpu02"] = {"gpu_model": "h200", "gpu_count": 1, "cpus": 192,
                                            "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}
    found = _problems(variables)
    p = found["hostvars[gpu01].gpushare_node.cpus"]
    assert p.message == "is required when gpushare_policy.cpu_memory_quota is proportional"
    assert p.allowed == "the server's CPU count"
    assert found["hostvars[gpu02].gpushare_node.memory_gib"].allowed == "the server's memory in GiB"


def test_proportional_cpu_and_memory_follow_each_teams_share_of_the_cards():
    variables = load_example("four-gpu-server")
    variables["gpushare_policy"]["cpu_memory_quota"] = "proportional"
    planned = plan.build_plan(variables)
    # gpu01: 192 CPUs and 2048 GiB over 4 GPUs, 48 and 512 a card. production: GPU 0 and all of
    # GPU 1's slices (its services' and the spare one, its own); data-science GPU 2; training GPU 3.
    quota = plan._cpu_memory(load_inventory(variables), planned["nodes"], None)
    assert quota == {"production": (96, 1024), "data-science": (48, 512), "training": (48, 512)}


def test_only_the_dra_servers_flavor_selects_the_dra_node_label():
    flavors = {o["metadata"]["name"]: o["spec"].get("nodeLabels") for o in
               plan.build_plan(load_example("mixed-fleet"))["kueue"]["objects"] if o["kind"] == "ResourceFlavor"}
    # docs/plan-format.md: the DRA servers carry nvidia.com/dra-kubelet-plugin=true.
    assert [name for name, labels in flavors.items() if labels and "nvidia.com/dra-kubelet-plugin" in labels] == [
        "h200-141gb-dra"]
    assert flavors["h200-141gb-dra"]["nvidia.com/dra-kubelet-plugin"] == "true"


def test_a_team_that_does_not_borrow_is_checked_per_pinned_model_too():
    # production (borrow: false) owns GPU 0 (H200) and now an A100; vllm-chat alone, pinned to the
    # A100 with 2 replicas: 2 whole GPUs in all is what it owns, but on a100-80gb it owns 1.
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["a100"] = {"gpu_model": "a100-80gb", "gpu_count": 1, "cpus": 64, "memory_gib": 512,
                                           "gpus": [{"index": 0, "mode": "whole", "team": "production"}]}
    variables["gpushare_workloads"] = [{"name": "vllm-chat", "team": "production", "kind": "serving",
                                        "sharing": "whole", "replicas": 2, "gpu_model": "a100-80gb"}]
    p = _problems(variables)["gpushare_teams[0]"]
    assert p.message == ("team production's workloads want 2 whole GPUs on a100-80gb but it owns 1 and does not "
                         "borrow (borrow: false)")


def test_unowned_gpus_follow_each_serving_teams_whole_shortfall_then_stay_in_the_pool():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"].update(gpu_count=7, gpus=[
        {"index": 0, "mode": "timeslice", "team": "production", "replicas": 2}] + [
        {"index": i, "mode": "whole"} for i in range(1, 7)])
    variables["gpushare_workloads"] = [
        {"name": "chat", "team": "production", "kind": "serving", "sharing": "whole", "replicas": 2},
        {"name": "rerank", "team": "production", "kind": "serving", "sharing": "whole", "replicas": 1},
        {"name": "big", "team": "training", "kind": "serving", "sharing": "whole", "replicas": 2}]
    owners = plan._assign_whole_gpus(load_inventory(variables), {})
    # Short: production 2 + 1 = 3 (its time-sliced GPU 0 is no whole GPU), training 2. GPU 1:
    # production (3), now 2; GPU 2: tie at 2 -> production, 1; GPU 3: training (2), 1; GPU 4: tie at
    # 1 -> production, 0; GPU 5: training, 0; GPU 6: nobody is short, it stays the cohort's.
    assert {index: team for (_node, index), team in owners.items()} == {
        1: "production", 2: "production", 3: "training", 4: "production", 5: "training", 6: None}


def test_what_a_team_may_borrow_is_capped_by_its_borrowing_limit():
    variables = load_example("four-gpu-server")
    training = next(t for t in variables["gpushare_teams"] if t["name"] == "training")
    training["borrowing_limit"] = 1
    variables["gpushare_nodes"]["gpu01"]["gpus"][2] = {"index": 2, "mode": "whole", "team": "production"}
    variables["gpushare_workloads"] = [{"name": "fine-tune", "team": "training", "kind": "training",
                                        "sharing": "whole", "gpus": 3}]
    # training owns GPU 3; production lends GPUs 0 and 2, of which training may borrow 1: 3 > 1 + 1.
    warnings = plan.build_plan(variables)["warnings"]
    assert any(w.startswith("team training wants 3 whole GPUs on h200-141gb but owns 1 and may borrow at most 1: "
                            "1 can never run at once") for w in warnings), warnings


def test_a_team_without_a_borrowing_limit_may_borrow_every_lent_replica():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][2] = {"index": 2, "mode": "timeslice", "team": "data-science",
                                                       "replicas": 24}
    variables["gpushare_workloads"].append({"name": "sweeps", "team": "training", "kind": "batch",
                                            "sharing": "timeslice", "replicas": 19})
    # training owns no time-sliced replica and has no borrowing_limit; data-science lends all 24 of GPU 2's:
    # 19 <= 0 + 24 (with the notebooks 5 + 19 = 24 replicas in all), so the 19 can run at once on borrowed replicas (none "can never run").
    warnings = plan.build_plan(variables)["warnings"]
    training = [w for w in warnings if w.startswith("team training wants 19 ")]
    assert len(training) == 1 and training[0].endswith("but owns 0: the rest must be borrowed"), warnings


# --------------------------------------------------------------------------- demand against what exists

def test_dra_memory_exactly_the_largest_dra_gpus_is_enough_and_more_is_refused():
    variables = load_dir(ROOT / "inventory-examples" / "mixed-fleet")
    index, w = next((i, w) for i, w in enumerate(variables["gpushare_workloads"]) if "device_request" in w)
    # The DRA server's H200: 143771 MiB (nvidia-smi), 143771 / 1024 GiB exactly is its whole memory.
    w["device_request"]["min_memory_gib"] = 143771 / 1024
    assert plan.build_plan(variables)["workloads"]
    w["device_request"]["min_memory_gib"] = 140.41        # 140.41 x 1024 = 143779.84 MiB > 143771
    p = _problems(variables)["gpushare_workloads[%d].device_request.min_memory_gib" % index]
    assert (p.message, p.value, p.allowed) == (
        "no GPU on a DRA node has that much memory (largest: 143771 MiB)", 140.41, "at most 140.4")


def test_dra_workloads_on_a_fleet_without_a_dra_server_are_named():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "eval", "team": "training", "kind": "batch",
                                            "device_request": {"min_memory_gib": 10}})
    problems = _problems(variables)
    none = problems["gpushare_workloads"]
    assert (none.message, none.value, none.allowed, none.hint) == (
        "a workload asks for a GPU by attributes (DRA) but no server has dra: true", ["eval"],
        "a server with dra: true", "Set gpushare_node.dra: true on the servers the DRA driver should serve")
    memory = problems["gpushare_workloads[6].device_request.min_memory_gib"]
    # No DRA GPU at all: the largest is 0 MiB, so at most 0 GiB.
    assert (memory.message, memory.value, memory.allowed) == (
        "no GPU on a DRA node has that much memory (largest: 0 MiB)", 10, "at most 0.0")


def test_time_sliced_replicas_of_all_workloads_add_up_against_the_time_sliced_gpus():
    variables = load_example("four-gpu-server")
    variables["gpushare_workloads"].append({"name": "sweeps", "team": "data-science", "kind": "batch",
                                            "sharing": "timeslice", "replicas": 3})
    # GPU 2 gives 5 replicas; the notebooks want 5 and the sweeps 3: 8 > 5.
    p = _problems(variables)["gpushare_workloads"]
    assert (p.message, p.value, p.allowed, p.hint) == (
        "8 timeslice replicas are wanted but the timeslice GPUs provide 5", 8, "at most 5",
        "Add GPUs with mode timeslice or raise their replicas")


def test_a_lending_limit_may_equal_the_whole_gpus_the_team_owns_but_not_exceed_them():
    variables = load_example("four-gpu-server")
    production = variables["gpushare_teams"][0]
    production["lending_limit"] = 1         # production owns one whole GPU (0); GPU 1 is MIG
    assert plan.build_plan(variables)["teams"]
    production["lending_limit"] = 2
    p = _problems(variables)["gpushare_teams[0].lending_limit"]
    assert (p.value, p.allowed) == (2, "0..1")


def test_a_teams_replicas_on_two_time_sliced_gpus_add_up():
    variables = load_example("four-gpu-server")
    gpus = variables["gpushare_nodes"]["gpu01"]["gpus"]
    gpus[2] = {"index": 2, "mode": "timeslice", "team": "data-science", "replicas": 5}
    gpus[3] = {"index": 3, "mode": "timeslice", "team": "data-science", "replicas": 5}
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] != "fine-tune"]
    variables["gpushare_workloads"].append({"name": "sweeps", "team": "data-science", "kind": "batch",
                                            "sharing": "timeslice", "replicas": 5})
    # data-science owns 5 + 5 = 10 time-sliced replicas (one count per node) and wants 5 + 5: nothing to borrow.
    warnings = plan.build_plan(variables)["warnings"]
    assert not [w for w in warnings if w.startswith("team data-science")], warnings


def test_a_teams_dra_gpus_count_as_its_own_for_its_dra_workloads():
    variables = load_dir(ROOT / "inventory-examples" / "mixed-fleet")
    w = next(w for w in variables["gpushare_workloads"] if "device_request" in w)
    w["replicas"] = 3
    # research owns the DRA server's GPUs 2 and 3: 3 wanted, 2 owned, the third borrowed (cohort pool: GPUs 4-7).
    warnings = [x for x in plan.build_plan(variables)["warnings"] if x.startswith("team research wants 3 ")]
    assert len(warnings) == 1 and warnings[0].endswith(" on h200-141gb but owns 2: the rest must be borrowed"), warnings
