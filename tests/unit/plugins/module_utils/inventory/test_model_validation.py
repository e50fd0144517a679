"""Every validation error names the inventory path, the bad value and what is allowed."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day


def problems_of(variables, plan=False):
    with pytest.raises(PlanInvalid) as caught:
        (build_plan if plan else load_inventory)(variables)
    return caught.value.problems


def only_problem(variables, plan=False):
    found = problems_of(variables, plan)
    assert len(found) == 1, [str(p) for p in found]
    return found[0]


def gpu(v, index):
    return next(g for g in v["gpushare_nodes"]["gpu01"]["gpus"] if g["index"] == index)


def test_example_day_is_valid():
    inventory = load_inventory(example_day())
    assert [t.name for t in inventory.teams] == ["production", "data-science", "training"]
    assert inventory.production_team.name == "production"
    assert [g.mode for g in inventory.nodes[0].gpus] == ["whole", "mig", "timeslice", "whole"]


def test_unknown_key_is_refused_with_a_suggestion():
    v = example_day()
    v["gpushare_teams"][0]["namespace"] = ["x"]
    p = only_problem(v)
    assert p.path == "gpushare_teams[0].namespace"
    assert "unknown key" in p.message and "namespaces" in p.hint
    assert "namespaces" in p.allowed


def test_boolean_given_as_string_is_refused():
    v = example_day()
    v["gpushare_teams"][1]["lend"] = "yes"
    p = only_problem(v)
    assert p.path == "gpushare_teams[1].lend"
    assert p.value == "yes" and p.allowed == "true, false"
    assert "unquoted" in p.hint


def test_wrong_type_integer():
    v = example_day()
    gpu(v, 2)["replicas"] = "5"
    p = only_problem(v)
    assert p.path == "hostvars[gpu01].gpushare_node.gpus[2].replicas"
    assert "integer" in p.message and p.value == "5"


def test_unknown_gpu_model_suggests_the_closest_name():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = "h20O"
    p = only_problem(v)
    assert p.path == "hostvars[gpu01].gpushare_node.gpu_model"
    assert p.value == "h20O"
    assert "h200" in p.hint
    assert "h200-141gb" in p.allowed


@pytest.mark.parametrize("model", ["l4", "l40s"])
def test_mig_on_a_card_without_mig_says_what_to_use_instead(model):
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = model
    for g in v["gpushare_nodes"]["gpu01"]["gpus"]:
        g.pop("schedule", None)
        if g["mode"] == "timeslice":
            g["mode"] = "whole"
            g.pop("replicas")
    found = problems_of(v)
    p = next(p for p in found if p.path.endswith("gpus[1].mode"))
    assert "has no MIG" in p.message
    assert "time-slicing" in p.hint and "whole" in p.hint


def test_mps_with_mig_on_one_node_is_refused():
    v = example_day()
    g = gpu(v, 2)
    g["mode"] = "mps"
    g.pop("schedule")
    found = problems_of(v)
    assert any("MPS cannot be combined with MIG" in p.message and p.path == "hostvars[gpu01].gpushare_node.gpus"
               for p in found)


def test_mps_with_timeslicing_on_one_node_is_refused():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpus"] = [
        {"index": 0, "mode": "mps", "team": "production", "replicas": 4},
        {"index": 1, "mode": "timeslice", "team": "data-science", "replicas": 4},
        {"index": 2, "mode": "mps", "team": "production", "replicas": 4},
        {"index": 3, "mode": "mps", "team": "production", "replicas": 4}]
    found = problems_of(v)
    assert any("MPS cannot be combined with time-slicing" in p.message for p in found)


def test_timeslicing_one_card_of_a_card_without_mig_is_refused():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = "l40s"
    v["gpushare_nodes"]["gpu01"]["gpus"] = [{"index": 0, "mode": "timeslice", "team": "data-science", "replicas": 4}]
    v["gpushare_workloads"] = []
    p = only_problem(v)
    assert "time-slicing applies to every GPU" in p.message
    assert "devices" in p.hint


def test_two_production_teams_are_refused():
    v = example_day()
    v["gpushare_teams"][2]["production"] = True
    p = only_problem(v)
    assert p.path == "gpushare_teams[2].production"
    assert "only one team" in p.message


def test_unknown_team_reference_lists_known_teams():
    v = example_day()
    v["gpushare_workloads"][0]["team"] = "prod"
    p = only_problem(v)
    assert p.path == "gpushare_workloads[0].team"
    assert p.value == "prod" and "production" in p.allowed


def test_namespace_in_two_teams_is_refused():
    v = example_day()
    v["gpushare_teams"][2]["namespaces"] = ["data-science"]
    p = only_problem(v)
    assert p.path == "gpushare_teams[2].namespaces" and "already belongs to team data-science" in p.message


def test_gpu_index_out_of_range_and_twice():
    v = example_day()
    gpus = v["gpushare_nodes"]["gpu01"]["gpus"]
    # As many entries as gpu_count (4): one index beyond it, one twice (more entries than GPUs
    # blame gpu_count instead: test_bad_input.py).
    gpus[3]["index"] = 7
    gpus[2]["index"] = 1
    found = {p.path: p for p in problems_of(v)}
    assert "hostvars[gpu01].gpushare_node.gpus[3].index" in found
    assert found["hostvars[gpu01].gpushare_node.gpus[3].index"].allowed == "0..3"
    assert "listed twice" in found["hostvars[gpu01].gpushare_node.gpus[2].index"].message


def test_bad_clock_in_a_sharing_window():
    v = example_day()
    gpu(v, 2)["schedule"][0]["from"] = "7pm"
    p = only_problem(v)
    assert p.path == "hostvars[gpu01].gpushare_node.gpus[2].schedule[0].from"
    assert p.value == "7pm" and "HH:MM" in p.allowed


def test_mig_layout_with_unknown_profile_lists_the_models_profiles():
    v = example_day()
    gpu(v, 1)["mig_layout"] = {"1g.10gb": 2}
    p = only_problem(v)
    assert p.path == "hostvars[gpu01].gpushare_node.gpus[1].mig_layout.1g.10gb"
    assert "1g.18gb" in p.allowed and "h200-141gb" in p.message


def test_lending_limit_above_what_the_team_owns_is_refused():
    v = example_day()
    v["gpushare_teams"][2]["lending_limit"] = 3
    p = only_problem(v, plan=True)
    assert p.path == "gpushare_teams[2].lending_limit"
    assert "exceeds the 1 whole GPUs the team owns" in p.message and p.allowed == "0..1"


def test_more_notebooks_than_timesliced_replicas_is_refused():
    v = example_day()
    v["gpushare_workloads"][4]["replicas"] = 9
    p = only_problem(v, plan=True)
    assert p.path == "gpushare_workloads"
    assert "9 timeslice replicas are wanted but the timeslice GPUs provide 5" in p.message


def test_a_pod_wider_than_any_server_is_refused():
    v = example_day()
    v["gpushare_workloads"][5]["gpus"] = 3
    p = only_problem(v, plan=True)
    assert p.path == "gpushare_workloads[5].gpus"
    assert "the most any server has is 2" in p.message


def test_mig_services_that_do_not_fit_explain_the_shortfall():
    v = example_day()
    v["gpushare_workloads"][1]["replicas"] = 9
    p = only_problem(v, plan=True)
    assert "do not fit" in p.message
    assert "9 replica(s) of embeddings" in p.message and "h200-141gb: 1 GPU(s) free for MIG" in p.message


def test_dra_request_larger_than_any_dra_gpu_is_refused():
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["dra"] = True
    v["gpushare_nodes"]["gpu01"]["gpus"] = [{"index": i, "mode": "whole", "team": "training"} for i in range(4)]
    v["gpushare_workloads"] = [{"name": "big", "team": "training", "kind": "batch",
                                "device_request": {"min_memory_gib": 200}}]
    p = only_problem(v, plan=True)
    assert p.path == "gpushare_workloads[0].device_request.min_memory_gib"
    assert "no GPU on a DRA node has that much memory" in p.message


def test_all_problems_are_reported_at_once():
    v = example_day()
    v["gpushare_teams"][0]["lend"] = "no"
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = "h300"
    v["gpushare_workloads"][0]["kind"] = "inference"
    paths = {p.path for p in problems_of(v)}
    assert {"gpushare_teams[0].lend", "hostvars[gpu01].gpushare_node.gpu_model", "gpushare_workloads[0].kind"} <= paths


def test_message_reads_as_path_value_allowed():
    v = example_day()
    v["gpushare_workloads"][0]["kind"] = "inference"
    text = str(only_problem(v))
    assert text == ("gpushare_workloads[0].kind: is not one of the allowed values (got 'inference'); "
                    "allowed: serving, notebook, training, batch. Use one of the allowed values")


@pytest.mark.parametrize("group", ["system:authenticated", "system:serviceaccounts", "system:masters"])
def test_kubernetes_system_groups_are_refused_as_members(group):
    v = example_day()
    v["gpushare_teams"][2]["members"] = ["ml-engineers", 7, group]
    found = problems_of(v)
    system = [p for p in found if "system group" in p.message]
    assert len(system) == 1, [str(p) for p in found]
    p = system[0]
    assert p.path == "gpushare_teams[2].members[2]" and p.value == group
    assert "identity provider" in p.allowed and "every user" in p.hint and group in str(p)
