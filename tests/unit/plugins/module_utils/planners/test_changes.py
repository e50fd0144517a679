# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two on the example day: the previous plan as the current state, what an edit changes,
and a previous plan that cannot be read (issue 18's bad input)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import PreviousPlanError
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan, plan_and_changes
from inventories import EXAMPLES, example_day
from playbooks import run_playbook


def _partitions(plan):
    return {(n["name"], g["index"]): (g["mig"] or {}).get("profiles") for n in plan["nodes"] for g in n["gpus"]}


def _first():
    variables = example_day()
    return variables, json.dumps(build_plan(variables))


def test_an_unchanged_inventory_changes_nothing():
    variables, text = _first()
    plan, changes = plan_and_changes(variables, text)
    assert json.dumps(plan) == text
    assert changes["previous"] is True
    assert (changes["repartitioned"], changes["gpus"], changes["moved"], changes["placed"], changes["freed"],
            changes["quotas"], changes["labels"]) == ([], [], [], [], [], [], [])


def test_the_first_plan_says_so():
    plan, changes = plan_and_changes(example_day(), None)
    assert changes["previous"] is False and changes["repartitioned"] == []


def test_a_service_that_fits_a_spare_slice_recuts_nothing():
    """gpu01 GPU 1 carries a spare 4g.71gb of production (plan.json of the example day, read
    here): a 30 GiB production service fits it, so no GPU needs another partition."""
    variables, text = _first()
    spare = [s for n in json.loads(text)["nodes"] for g in n["gpus"] if g["mig"] and g["mode"] == "mig"
             for s in g["mig"]["slices"] if s["workload"] is None]
    assert spare and max(s["memory_mib"] for s in spare) >= 30 * 1024
    variables["gpushare_workloads"].append({"name": "reranker", "team": "production", "kind": "serving",
                                           "isolation": "hardware", "memory_gib": 30})
    plan, changes = plan_and_changes(variables, text)
    assert changes["repartitioned"] == []
    assert _partitions(plan) == _partitions(json.loads(text))
    assert changes["moved"] == []
    assert [(m["workload"], m["replica"]) for m in changes["placed"]] == [("reranker", 0)]
    reranker = next(w for w in plan["workloads"] if w["name"] == "reranker")
    before = {(n["name"], g["index"], s["profile"], s["start"]): s["workload"]
              for n in json.loads(text)["nodes"] for g in n["gpus"] if g["mig"] for s in g["mig"]["slices"]}
    where = reranker["slices"][0]
    assert before[(where["node"], where["gpu"], where["profile"], where["start"])] is None   # was spare


def test_removing_a_service_recuts_nothing_and_moves_no_other():
    variables, text = _first()
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] != "classifier"]
    plan, changes = plan_and_changes(variables, text)
    assert changes["repartitioned"] == [] and changes["moved"] == []
    assert _partitions(plan) == _partitions(json.loads(text))


def test_optimal_replan_compares_and_may_recut():
    variables, text = _first()
    variables["gpushare_policy"]["replan"] = "optimal"
    plan, changes = plan_and_changes(variables, text)
    assert changes["replan"] == "optimal" and changes["previous"] is True
    assert json.dumps(plan) == text     # nothing edited: the same optimum


@pytest.mark.parametrize("text, why", [
    ("{not json", "not valid JSON"),
    (json.dumps({"format": "gpushare.cluster/plan-v0", "cluster": {"name": "example-day"}}), "plan-v0"),
    (json.dumps({"nodes": []}), "no 'format' key"),
    (json.dumps({"format": "gpushare.cluster/plan-v1", "cluster": {"name": "other"}, "nodes": []}),
     "the plan of cluster 'other', while the inventory plans cluster 'example-day'"),
    (json.dumps({"format": "gpushare.cluster/plan-v1", "cluster": {"name": "example-day"}}), "not a complete plan"),
])
def test_a_previous_plan_that_cannot_be_read_is_refused(text, why):
    with pytest.raises(PreviousPlanError, match=why.replace("(", r"\(")):
        plan_and_changes(example_day(), text)
    variables = example_day()
    variables["gpushare_policy"]["replan"] = "optimal"
    plan, changes = plan_and_changes(variables, text)
    assert changes["previous"] is False


def test_plan_playbook_names_the_corrupt_previous_plan_and_writes_nothing(tmp_path):
    plan_dir = tmp_path / "plan"
    plan_dir.mkdir()
    (plan_dir / "plan.json").write_text("{corrupt")
    rc, result, _err = run_playbook("plan.yml", EXAMPLES / "four-gpu-server" / "hosts.yml",
                                    "-e", "gpushare_plan_dir=%s" % plan_dir)
    assert rc != 0
    message = json.dumps(result)
    assert str(plan_dir / "plan.json") in message and "replan: optimal" in message and "delete the file" in message
    assert sorted(p.name for p in plan_dir.iterdir()) == ["plan.json"]
    assert (plan_dir / "plan.json").read_text() == "{corrupt"
