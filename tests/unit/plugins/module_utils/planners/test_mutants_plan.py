# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who gets the GPUs no team owns, worked out by hand (plan._assign_whole_gpus' rule: one GPU
at a time, in GPU order, to the serving team with the largest shortfall of whole GPUs, ties
by name). Kills plan.py mutants that survived `make mutation` (docs/testing.md, "Mutation
testing")."""

from __future__ import annotations

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
