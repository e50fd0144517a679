"""What a new user meets in the first hour (issue 20): demand no team can meet, a model the
fleet lacks, MIG hinted for a card without it, a window that lends a GPU to another team,
a misspelt variable, a wrongly shaped value. Expected numbers are worked out by hand from the
example day (inventory-examples/four-gpu-server: gpu01's GPU 0 whole for production, GPU 1
MIG, GPU 2 time-sliced x5 for data-science, GPU 3 whole for training)."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import example_day
from test_bad_input import NODE, problems_of  # one helper: path -> problem, each with allowed and hint


def workload(v, name):
    return next(w for w in v["gpushare_workloads"] if w["name"] == name)


def gpu(v, index, host="gpu01"):
    return next(g for g in v["gpushare_nodes"][host]["gpus"] if g["index"] == index)


def with_l40s_server(v, *gpus):
    v["gpushare_nodes"]["l40s01"] = {"gpu_model": "l40s", "gpu_count": len(gpus),
                                     "gpus": [dict(g, index=i) for i, g in enumerate(gpus)]}
    return v


# --------------------------------------------------------------------------- 1. demand

def test_a_team_that_does_not_borrow_cannot_want_more_than_it_owns():
    v = example_day()
    workload(v, "vllm-chat")["replicas"] = 7          # production owns GPU 0 only, borrow: false
    found = problems_of(v)
    assert list(found) == ["gpushare_teams[0]"]
    p = found["gpushare_teams[0]"]
    assert "want 7 whole GPUs on h200-141gb but it owns 1 and does not borrow" in p.message
    assert p.value == 7 and p.allowed == "at most 1" and "vllm-chat (7 x 1)" in p.hint


def test_a_team_that_borrows_is_warned_with_the_numbers():
    v = example_day()
    workload(v, "fine-tune")["replicas"] = 3          # 3 x 2 = 6; training owns GPU 3; production lends GPU 0
    warnings = build_plan(v)["warnings"]
    assert "team training wants 6 whole GPUs on h200-141gb but owns 1 and may borrow at most 1: 4 can never run " \
           "at once (fine-tune (3 x 2))" in warnings


def test_what_may_be_borrowed_follows_the_lenders_lending_limit():
    v = example_day()
    workload(v, "fine-tune")["replicas"] = 3          # 6 GPUs; training owns 1
    v["gpushare_teams"][0]["lending_limit"] = 0       # production lends none of its one whole GPU
    assert "team training wants 6 whole GPUs on h200-141gb but owns 1 and may borrow at most 0: 5 can never run " \
           "at once (fine-tune (3 x 2))" in build_plan(v)["warnings"]


def test_shared_replicas_of_a_team_that_does_not_borrow():
    v = example_day()
    gpu(v, 2)["team"] = "training"                    # the five time-sliced replicas now belong to training
    v["gpushare_teams"][1]["borrow"] = False          # data-science
    p = problems_of(v)["gpushare_teams[1]"]
    assert "want 5 time-sliced replicas on h200-141gb but it owns 0 and does not borrow" in p.message


def test_the_example_day_warns_that_the_fine_tune_borrows():
    assert build_plan(example_day())["warnings"] == [
        "team training wants 2 whole GPUs on h200-141gb but owns 1: the rest must be borrowed"]


# --------------------------------------------------------------------------- 2. a model the fleet lacks

@pytest.mark.parametrize("sharing", ["whole", "timeslice", "mig", "mps"])
def test_a_workload_pinned_to_a_model_the_fleet_lacks_is_refused_for_every_mode(sharing):
    v = example_day()
    v["gpushare_workloads"].append({"name": "pinned", "team": "training", "kind": "batch", "sharing": sharing,
                                    "memory_gib": 10, "gpu_model": "b200"})
    found = problems_of(v)
    assert list(found) == ["gpushare_workloads[6].gpu_model"]
    p = found["gpushare_workloads[6].gpu_model"]
    assert p.message == "no server has b200 GPUs" and p.value == "b200"
    assert p.allowed == "the models of the fleet: h200-141gb"


# --------------------------------------------------------------------------- 3. no MIG hints for a card without MIG

def test_a_mig_service_pinned_to_a_card_without_mig():
    v = with_l40s_server(example_day(), {"mode": "whole", "team": "training"})
    workload(v, "embeddings")["gpu_model"] = "l40s"
    p = problems_of(v)["gpushare_workloads[1].gpu_model"]
    assert p.message.startswith("l40s has no MIG")
    assert p.allowed == "a MIG-capable model of the fleet: h200-141gb"
    assert "mode: mig" not in p.hint and "l40s" not in p.allowed


def test_a_mig_layout_on_a_card_without_mig():
    v = with_l40s_server(example_day(), {"mode": "whole", "team": "training", "mig_layout": {"1g.10gb": 2}})
    p = problems_of(v)["hostvars[l40s01].gpushare_node.gpus[0].mig_layout"]
    assert "l40s has no MIG" in p.message and "mode: mig" not in p.hint


def test_the_two_messages_of_a_mig_gpu_among_time_sliced_l40s_agree():
    v = with_l40s_server(example_day(), {"mode": "timeslice", "team": "training", "replicas": 2},
                         {"mode": "mig", "team": "training"})
    found = problems_of(v)
    mode = found["hostvars[l40s01].gpushare_node.gpus[1].mode"]
    node = found["hostvars[l40s01].gpushare_node.gpus"]
    assert node.allowed == "mode: timeslice on all GPUs of the node"
    assert mode.allowed == "timeslice" and "mig" not in mode.hint


# --------------------------------------------------------------------------- 4. a window that changes only the team

def test_a_window_lends_a_whole_gpu_to_another_team_at_night():
    v = example_day()
    gpu(v, 0)["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole",
                              "team": "training"}]
    plan = build_plan(v)
    night = next(w for w in plan["windows"] if w["name"] == "night")
    assert {"node": "gpu01", "index": 0, "mode": "whole", "team": "training"} in night["gpus"]
    queues = {o["metadata"]["name"]: o for o in night["kueue"]["objects"] if o["kind"] == "ClusterQueue"}

    def nominal(team):
        return next(r["nominalQuota"] for g in queues[team]["spec"]["resourceGroups"] for f in g["flavors"]
                    if f["name"] == "h200-141gb-whole" for r in f["resources"] if r["name"] == "nvidia.com/gpu")
    # At night: GPU 0 (lent) and GPU 3 are training's, GPU 2 (whole at night) data-science's.
    assert (nominal("training"), nominal("production"), nominal("data-science")) == (2, 0, 1)
    # The day is unchanged: GPU 0 is production's.
    assert plan["nodes"][0]["gpus"][0]["team"] == "production"


def test_a_window_of_the_same_mode_and_team_still_changes_nothing():
    v = example_day()
    gpu(v, 0)["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "whole",
                              "team": "production"}]
    p = problems_of(v)[NODE + ".gpus[0].schedule[0].mode"]
    assert "changes nothing" in p.message and "team" in p.hint


def test_a_window_cannot_hand_a_mig_gpu_to_another_team():
    v = example_day()
    gpu(v, 1)["schedule"] = [{"name": "night", "from": "19:00", "until": "07:00", "mode": "mig", "team": "training"}]
    p = problems_of(v)[NODE + ".gpus[1].schedule[0].mode"]
    assert "cannot hand a MIG GPU to another team" in p.message


# --------------------------------------------------------------------------- 5. misspelt variables

def test_a_misspelt_variable_is_named_instead_of_its_follow_on_errors():
    v = example_day()
    v.pop("gpushare_teams")
    with pytest.raises(PlanInvalid) as caught:
        load_inventory(v, ["gpushare_team", "gpushare_workloads", "gpushare_policy", "gpushare_plan_dir"])
    assert [str(p) for p in caught.value.problems] == [
        "gpushare_team: unknown variable; allowed: the gpushare_* variables listed in docs/roles.md (Variables). "
        "Did you mean 'gpushare_teams'?"]


def test_known_variables_pass():
    load_inventory(example_day(), ["gpushare_teams", "gpushare_workloads", "gpushare_policy", "gpushare_window_at"])


# --------------------------------------------------------------------------- 6. shapes

@pytest.mark.parametrize("change, path, message", [
    (lambda v: v["gpushare_teams"][1].update(members={"a": 1}), "gpushare_teams[1].members",
     "expected a list of strings, got a mapping"),
    (lambda v: v.update(gpushare_teams={"name": "production"}), "gpushare_teams", "expected a list, got a mapping"),
    (lambda v: v["gpushare_workloads"].__setitem__(0, "vllm-chat"), "gpushare_workloads[0]",
     "expected a mapping, got a string"),
])
def test_a_wrongly_shaped_value_names_its_path_and_what_it_got(change, path, message):
    v = example_day()
    change(v)
    assert problems_of(v)[path].message == message


def test_hardware_isolation_with_a_device_request_is_refused():
    """Found by the fuzz test: the DRA claim gets a whole device, so isolation: hardware (a
    MIG slice) was silently dropped."""
    v = example_day()
    v["gpushare_workloads"].append({"name": "x", "team": "training", "kind": "serving", "isolation": "hardware",
                                    "device_request": {"min_memory_gib": 10}})
    p = problems_of(v)["gpushare_workloads[6].isolation"]
    assert "contradicts the device_request" in p.message and p.value == "hardware"


def test_the_letter_o_for_a_zero_gets_a_suggestion():
    """The README's example: h2OO (letters) for h200 was refused without a suggestion."""
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = "h2OO"
    p = problems_of(v)[NODE + ".gpu_model"]
    assert p.hint.startswith("Did you mean 'h200-141gb'")


@pytest.mark.parametrize("written", ["0x2335", 0x2335, "10de:2335"])
def test_a_pci_id_names_the_model_as_the_example_inventory_says(written):
    """host_vars/gpu01.yml says 'catalogue name, alias or PCI ID: h200, "NVIDIA H200", 0x2335';
    YAML reads 0x2335 unquoted as the number 9013. NVIDIA's PCI id list gives 0x2335 for the H200."""
    v = example_day()
    v["gpushare_nodes"]["gpu01"]["gpu_model"] = written
    assert build_plan(v)["nodes"][0]["model"] == "h200-141gb"
