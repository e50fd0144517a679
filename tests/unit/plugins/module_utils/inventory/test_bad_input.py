"""Reproducers of ordinary mistakes that used to crash or plan the wrong thing: each must
end in PlanInvalid whose problems name the inventory path, the value, what is allowed and
what to do."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day

NODE = "hostvars[gpu01].gpushare_node"


def problems_of(variables) -> dict:
    """path -> problem; every problem must say what is allowed and what to do."""
    with pytest.raises(PlanInvalid) as caught:
        build_plan(variables)
    for p in caught.value.problems:
        assert p.allowed and p.hint, "problem without allowed or hint: %s" % p
    return {p.path: p for p in caught.value.problems}


def gpu(v, index, host="gpu01"):
    return next(g for g in v["gpushare_nodes"][host]["gpus"] if g["index"] == index)


def workload(v, name):
    return next(w for w in v["gpushare_workloads"] if w["name"] == name)


def small_fleet(*nodes) -> dict:
    """Teams of the example day, no workloads, the given (host, gpushare_node) pairs."""
    v = example_day()
    v["gpushare_workloads"] = []
    v["gpushare_nodes"] = dict(nodes)
    return v


# --------------------------------------------------------------------------- time zones

@pytest.mark.parametrize("zone, hint", [
    ("America", "America is a region; name a zone in it, e.g. America/"),
    ("x" * 256, ""),
    ("Europe/Berln", "Did you mean 'Europe/Berlin'?"),
    ("../../etc/passwd", ""),
])
def test_a_time_zone_that_is_not_a_zone_is_refused(zone, hint):
    v = example_day()
    v["gpushare_policy"]["timezone"] = zone
    p = problems_of(v)["gpushare_policy.timezone"]
    assert p.message == "unknown time zone" and p.value == zone
    assert hint in p.hint


# --------------------------------------------------------------------------- MIG without MIG GPUs

def test_a_mig_service_with_no_gpu_that_may_be_cut_names_the_gpus_that_could_be():
    v = example_day()
    gpu(v, 1)["mode"] = "whole"
    found = problems_of(v)
    p = found["gpushare_workloads[1].sharing"]
    assert "service embeddings needs a MIG slice, but no h200-141gb GPU may be cut with MIG" in p.message
    assert "gpu01 GPU 1 (whole)" in p.allowed and "Set mode: mig or auto" in p.hint
    assert {"gpushare_workloads[2].sharing", "gpushare_workloads[3].sharing"} <= set(found)


def test_a_mig_service_pinned_to_a_model_the_inventory_lacks():
    v = example_day()
    workload(v, "embeddings")["gpu_model"] = "a100-80gb"
    p = problems_of(v)["gpushare_workloads[1].gpu_model"]
    assert p.message == "no server has a100-80gb GPUs"
    assert p.allowed == "the models of the fleet: h200-141gb"


def test_a_mig_profile_on_a_fleet_without_mig():
    v = small_fleet(("l40s01", {"gpu_model": "l40s", "gpu_count": 2}))
    v["gpushare_workloads"] = [{"name": "encoder", "team": "production", "kind": "serving", "sharing": "mig",
                                "mig_profile": "1g.18gb"}]
    p = problems_of(v)["gpushare_workloads[0].mig_profile"]
    assert "any GPU here" in p.message and p.allowed.startswith("none")


# --------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1.8e308, 10 ** 30])
@pytest.mark.parametrize("name", ["vllm-chat", "embeddings"])
def test_memory_that_is_not_a_finite_amount_is_refused(name, value):
    v = example_day()
    w = workload(v, name)
    w["memory_gib"] = value
    index = v["gpushare_workloads"].index(w)
    p = problems_of(v)["gpushare_workloads[%d].memory_gib" % index]
    assert p.has_value and "(got " in str(p)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_device_request_that_is_not_finite_is_refused_before_any_claim_is_written(value):
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["dra"] = True
    for g in v["gpushare_nodes"]["gpu01"]["gpus"]:
        g.pop("schedule", None)
        g.pop("replicas", None)
        g["mode"] = "whole"
    v["gpushare_workloads"] = [{"name": "big", "team": "training", "kind": "training",
                                "device_request": {"min_memory_gib": value}}]
    found = problems_of(v)
    assert list(found) == ["gpushare_workloads[0].device_request.min_memory_gib"]
    assert "finite" in found["gpushare_workloads[0].device_request.min_memory_gib"].message


def test_a_valid_plan_is_strict_json():
    json.dumps(build_plan(example_day()), allow_nan=False)


# --------------------------------------------------------------------------- GPUs of another model

def test_a_per_gpu_model_other_than_the_servers_is_refused():
    v = example_day()
    gpu(v, 3)["model"] = "l4"
    p = problems_of(v)[NODE + ".gpus[3].model"]
    assert "differs from the server's gpu_model h200-141gb" in p.message and p.value == "l4"


def test_a_mig_layout_of_another_cards_profiles_is_refused():
    v = example_day()
    gpu(v, 1)["mig_layout"] = {"3g.40gb": 2}        # an A100 80GB profile on an H200
    p = problems_of(v)[NODE + ".gpus[1].mig_layout.3g.40gb"]
    assert "is not a MIG profile of h200-141gb" in p.message and "3g.71gb" in p.allowed


def test_a_fixed_layout_without_a_placement_is_reported_at_that_gpu():
    v = example_day()
    gpu(v, 1)["mig_layout"] = {"4g.71gb": 2}
    p = problems_of(v)[NODE + ".gpus[1].mig_layout"]
    assert "has no valid placement on h200-141gb" in p.message


def test_a_fixed_full_card_instance_next_to_a_time_sliced_gpu_is_refused():
    v = example_day()
    gpu(v, 1)["mig_layout"] = {"7g.141gb": 1}
    p = problems_of(v)[NODE + ".gpus[1].mig_layout"]
    assert "7g.141gb, the full-card instance that time-slices GPUs [2]" in p.message
    assert p.value == {"7g.141gb": 1}


# --------------------------------------------------------------------------- node names

@pytest.mark.parametrize("other", ["GPU01", "gpu01.example.com"])
def test_two_hosts_that_become_one_node_are_refused(other):
    v = example_day()
    v["gpushare_nodes"][other] = {"gpu_model": "h200", "gpu_count": 1, "gpus": [{"index": 0, "mode": "whole"}]}
    found = problems_of(v)
    p = found.get("hostvars[%s].gpushare_node" % other) or found["hostvars[gpu01].gpushare_node"]
    assert "becomes Kubernetes node gpu01" in p.message


def test_a_gpu_host_without_a_gpushare_node_is_named():
    v = example_day()
    v["gpushare_nodes"]["gpu02"] = None
    p = problems_of(v)["hostvars[gpu02].gpushare_node"]
    assert "host_vars/gpu02.yml" in p.hint


# --------------------------------------------------------------------------- every state of the day

def test_a_whole_night_window_on_one_of_four_time_sliced_l40s_is_refused():
    gpus = [{"index": i, "mode": "timeslice", "replicas": 4, "team": "data-science"} for i in range(4)]
    gpus[0]["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole", "team": "training"}]
    v = small_fleet(("l40s01", {"gpu_model": "l40s", "gpu_count": 4, "gpus": gpus}))
    p = problems_of(v)["hostvars[l40s01].gpushare_node.gpus"]
    assert p.message.startswith("inside sharing window night: l40s has no MIG, so time-slicing applies to every GPU")


def test_a_time_sliced_window_on_a_dra_server_is_refused():
    gpus = [{"index": 0, "mode": "whole", "team": "training",
             "schedule": [{"name": "day", "from": "07:00", "until": "19:00", "mode": "timeslice", "replicas": 4,
                           "team": "data-science"}]},
            {"index": 1, "mode": "whole", "team": "production"}]
    v = small_fleet(("gpu01", {"gpu_model": "h200", "gpu_count": 2, "dra": True, "gpus": gpus}))
    p = problems_of(v)[NODE + ".dra"]
    assert p.message.startswith("inside sharing window day: a DRA node is served by the DRA driver")


def test_a_mig_window_on_a_card_without_mig_points_at_the_window():
    gpus = [{"index": 0, "mode": "whole", "team": "training",
             "schedule": [{"name": "day", "from": "07:00", "until": "19:00", "mode": "mig"}]}]
    v = small_fleet(("l40s01", {"gpu_model": "l40s", "gpu_count": 1, "gpus": gpus}))
    p = problems_of(v)["hostvars[l40s01].gpushare_node.gpus[0].schedule[0].mode"]
    assert "inside sharing window day: l40s has no MIG" in p.message


# --------------------------------------------------------------------------- lending_limit

def test_lending_limit_is_a_total_over_the_teams_pools():
    """Production owns 4 whole GPUs in two pools; lending_limit 1 lends at most 1 in all."""
    v = small_fleet(("a100", {"gpu_model": "a100-80gb", "gpu_count": 2,
                              "gpus": [{"index": i, "mode": "whole", "team": "production"} for i in range(2)]}),
                    ("h200", {"gpu_model": "h200", "gpu_count": 2,
                              "gpus": [{"index": i, "mode": "whole", "team": "production"} for i in range(2)]}))
    v["gpushare_teams"][0]["lending_limit"] = 1
    plan = build_plan(v)
    queue = next(o for o in plan["kueue"]["objects"] if o["kind"] == "ClusterQueue"
                 and o["metadata"]["name"] == "production")
    limits = [r["lendingLimit"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]
              for r in f["resources"] if r["name"] == "nvidia.com/gpu" and r["nominalQuota"]]
    assert sorted(limits) == [0, 1]
    v["gpushare_teams"][0]["lending_limit"] = 5
    assert "exceeds the 4 whole GPUs the team owns" in problems_of(v)["gpushare_teams[0].lending_limit"].message


# --------------------------------------------------------------------------- messages

def test_an_unquoted_time_is_recognised():
    v = example_day()
    gpu(v, 2)["schedule"][0]["from"] = 1140          # YAML 1.1 reads from: 19:00 as 1140
    p = problems_of(v)[NODE + ".gpus[2].schedule[0].from"]
    assert "looks like an unquoted time" in p.message and p.hint == 'Quote it: from: "19:00"'


def test_an_ambiguous_model_lists_the_candidates():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = "h100"
    p = problems_of(v)[NODE + ".gpu_model"]
    assert p.message == "names several GPU models" and "h100-80gb" in p.allowed and "h100-94gb" in p.allowed


def test_an_unknown_team_when_no_team_is_defined_says_so():
    v = example_day()
    v["gpushare_teams"] = []
    p = problems_of(v)["gpushare_workloads[0].team"]
    assert p.message == "unknown team: gpushare_teams defines no team"


def test_a_null_value_is_shown():
    v = example_day()
    workload(v, "vllm-chat")["kind"] = None
    assert "(got null)" in str(problems_of(v)["gpushare_workloads[0].kind"])


def test_an_empty_optional_value_means_the_default():
    """`priority:` with nothing after the colon is YAML null: the default, not a crash."""
    v = example_day()
    v["gpushare_teams"][2]["priority"] = None
    v["gpushare_policy"]["cohort"] = None
    plan = build_plan(v)
    assert [t["priority"] for t in plan["teams"]] == [1000, 500, 100]
    assert plan["cluster"]["cohort"] == "gpushare"


def test_an_empty_replicas_on_a_time_sliced_gpu_is_required():
    v = example_day()
    gpu(v, 2)["replicas"] = None
    p = problems_of(v)[NODE + ".gpus[2].replicas"]
    assert p.message.startswith("is required for mode timeslice")


# --------------------------------------------------------------------------- Pod Security level

@pytest.mark.parametrize("level, message, hint", [
    ("privileged", "would let the team's members run privileged pods (root on a GPU server)", "Use baseline"),
    ("baselin", "is not one of the allowed values", "Did you mean 'baseline'?"),
    (True, "is not one of the allowed values", "Use one of the allowed values"),
])
def test_a_pod_security_level_other_than_restricted_or_baseline_is_refused(level, message, hint):
    v = example_day()
    v["gpushare_teams"][2]["pod_security"] = level
    p = problems_of(v)["gpushare_teams[2].pod_security"]
    assert (p.message, p.value, p.allowed) == (message, level, "restricted, baseline")
    assert hint in p.hint
