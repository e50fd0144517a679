# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two on mig-dynamic GPUs: a service resized or scaled changes only its claim template and
the quotas. No GPU is re-cut, no node cordoned, no other pod restarts, and the change list says
so. Expected answers are worked by hand from the example inventory static-and-dynamic-mig:
embedder grows from 14 GiB (1g.18gb) to 30 GiB (1g.35gb, the fewest compute slices holding it);
chat goes from 2 to 3 replicas."""

from __future__ import annotations

import copy
import json

from ansible_collections.gpushare.cluster.plugins.module_utils.planners import changes
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import plan_and_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import changes_markdown

from inventories import load_example


def _resized() -> dict:
    inventory = copy.deepcopy(load_example("static-and-dynamic-mig"))
    for w in inventory["gpushare_workloads"]:
        if w["name"] == "embedder":
            w["memory_gib"] = 30
        if w["name"] == "chat":
            w["replicas"] = 3
    return inventory


def test_a_resize_changes_only_templates_and_quotas_and_evicts_nothing():
    previous = plan_and_changes(load_example("static-and-dynamic-mig"))[0]
    plan, change = plan_and_changes(_resized(), json.dumps(previous))
    assert change["repartitioned"] == [] and change["gpus"] == [] and change["labels"] == []
    # Only embedder's own pods restart, for their new template; chat's third replica starts.
    assert {(r["workload"], r["replica"]) for r in change["restarts"]} == {("embedder", 0), ("embedder", 1)}
    for r in change["restarts"]:
        assert [x["why"] for x in r["reasons"]] == [changes.NEW_RESOURCE]
        assert r["old"] == "ResourceClaimTemplate embedder-1g.18gb" and r["new"] == "ResourceClaimTemplate embedder-1g.35gb"
    assert [(s["workload"], s["replica"]) for s in change["started"]] == [("chat", 2)] and change["ended"] == []
    # 1g.18gb is no longer asked for: the guaranteed total grows, so both teams' shares do.
    assert {q["team"] for q in change["quotas"]} == {"inference", "research"}
    assert change["dynamic_mig"] == {"kept": ["h200-dynamic GPU 0", "h200-dynamic GPU 1"], "from_static": []}
    lines = "\n".join(changes.change_lines(change))
    assert "0 GPU(s) re-cut" in lines and "never re-cut; nothing cordoned or evicted" in lines
    assert "never re-cut; nothing cordoned or evicted" in changes_markdown(change)
    names = {t["metadata"]["name"] for t in plan["dra"]["claim_templates"]}
    assert "embedder-1g.35gb" in names and "embedder-1g.18gb" not in names


def test_a_static_gpu_made_dynamic_is_named_with_the_order_of_steps():
    """h200-static GPU 0 is cut by the MIG Manager; made mig-dynamic (its server a DRA server),
    the change list says to apply it as a whole GPU first."""
    previous = plan_and_changes(load_example("static-and-dynamic-mig"))[0]
    inventory = _resized()
    node = inventory["gpushare_nodes"]["h200-static"]
    node["dra"] = True
    node["gpus"] = [{"index": 0, "mode": "mig-dynamic", "team": "inference"},
                    {"index": 1, "mode": "mig-dynamic", "team": "research"}]
    inventory["gpushare_workloads"] = [w for w in inventory["gpushare_workloads"]
                                       if w["name"] not in ("reranker", "pretrain")]
    _plan, change = plan_and_changes(inventory, json.dumps(previous))
    assert change["dynamic_mig"]["from_static"] == ["h200-static GPU 0"]
    assert any("h200-static GPU 0: static MIG layout -> dynamic MIG: apply it as a whole GPU first" in line
               for line in changes.change_lines(change))
