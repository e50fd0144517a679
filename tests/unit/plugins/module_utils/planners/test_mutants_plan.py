# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who gets the GPUs no team owns, worked out by hand (plan._assign_whole_gpus' rule: one GPU
at a time, in GPU order, to the serving team with the largest shortfall of whole GPUs, ties
by name). Kills plan.py mutants that survived `make mutation` (docs/testing.md, "Mutation
testing")."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import load_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan
from inventories import load_example


def test_unowned_whole_gpus_go_one_at_a_time_to_the_team_shortest_of_gpus():
    variables = load_example("four-gpu-server")
    node = variables["gpushare_nodes"]["gpu01"]
    node["gpus"] = [{"index": 0, "mode": "whole", "team": "production"}] + [
        {"index": i, "mode": "whole"} for i in (1, 2, 3)]
    variables["gpushare_workloads"] = [
        {"name": "chat", "team": "production", "kind": "serving", "sharing": "whole", "replicas": 3},
        {"name": "big", "team": "training", "kind": "serving", "sharing": "whole", "replicas": 1, "gpus": 2},
        {"name": "fine-tune", "team": "data-science", "kind": "training", "sharing": "whole", "replicas": 4}]
    owners = plan._assign_whole_gpus(load_inventory(variables), {}, None)
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
