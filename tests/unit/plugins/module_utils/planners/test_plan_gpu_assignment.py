# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who gets which GPU and in which mode, worked out by hand: the GPUs no team owns (plan's
rule: one GPU at a time, in GPU order, to the serving team with the largest shortfall of whole
GPUs, ties by name), auto GPUs beside time-sliced and MIG ones, windows, MPS shares, DRA
servers, CPU and memory quotas in proportion to the cards, and what a team may borrow.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import ROOT, load_dir, load_example
from plan_cases import embeddings_entry, pinned_to_the_whole_card, plan_problems


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


def test_an_auto_gpu_never_gets_the_full_instance_a_neighbour_time_slices():
    # GPU 2 is time-sliced through a 7g.141gb instance: the device plugin time-slices by resource name
    # (k8s-device-plugin README), so a 7g.141gb on the auto GPU 1 would be time-sliced as well: refused.
    with pytest.raises(PlanInvalid) as refused:
        plan.build_plan(pinned_to_the_whole_card("timeslice"))
    assert "embeddings" in str(refused.value)
    # The same pin with a whole neighbour: the auto GPU is cut into the one 7g.141gb instance.
    planned = plan.build_plan(pinned_to_the_whole_card("whole"))
    assert next(g for g in planned["nodes"][0]["gpus"] if g["index"] == 1)["mig"]["profiles"] == {"7g.141gb": 1}


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
    p = plan_problems(variables)["gpushare_workloads[0].sharing"]
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


def test_a_declared_mig_gpu_never_gets_the_full_instance_a_neighbour_time_slices():
    variables = pinned_to_the_whole_card("timeslice")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "mig", "team": "production"}
    index = embeddings_entry(variables)[0]
    assert "gpushare_workloads[%d].sharing" % index in plan_problems(variables)


def test_an_auto_gpus_team_owns_its_spare_slices():
    variables = load_example("four-gpu-server")
    variables["gpushare_nodes"]["gpu01"]["gpus"][1] = {"index": 1, "mode": "auto", "team": "training"}
    cut = plan.build_plan(variables)["nodes"][0]["gpus"][1]["mig"]["slices"]
    assert {s["team"] for s in cut if s["workload"] is None} == {"training"}


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
    # training owns GPU 3; production lends GPUs 0 and 2, of which training may borrow 1: 3 > 1 + 1 in
    # every state of the day (the example's only window lends GPU 2, now production's), so it is refused.
    with pytest.raises(PlanInvalid) as refused:
        plan.build_plan(variables)
    assert "workload fine-tune needs 3 whole GPUs on one server" in str(refused.value)
    assert "the base state at most 2 (gpu01)" in str(refused.value)


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
