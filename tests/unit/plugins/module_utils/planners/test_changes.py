# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two on the example day: the previous plan as the current state, what an edit changes,
and a previous plan that cannot be read (issue 18's bad input)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import (
    APPLIED_PLAN, PLAN_FILE, PreviousPlanError, has_changes, previous_plan_path)
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan, plan_and_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.plan_files import plan_files
from inventories import EXAMPLES, ROOT, example_day
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
    assert (changes["repartitioned"], changes["gpus"], changes["restarts"], changes["started"], changes["ended"],
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
    assert changes["restarts"] == []
    assert [(m["workload"], m["replica"]) for m in changes["started"]] == [("reranker", 0)]
    reranker = next(w for w in plan["workloads"] if w["name"] == "reranker")
    before = {(n["name"], g["index"], s["profile"], s["start"]): s["workload"]
              for n in json.loads(text)["nodes"] for g in n["gpus"] if g["mig"] for s in g["mig"]["slices"]}
    where = reranker["slices"][0]
    assert before[(where["node"], where["gpu"], where["profile"], where["start"])] is None   # was spare


def test_removing_a_service_recuts_nothing_and_moves_no_other():
    variables, text = _first()
    variables["gpushare_workloads"] = [w for w in variables["gpushare_workloads"] if w["name"] != "classifier"]
    plan, changes = plan_and_changes(variables, text)
    assert changes["repartitioned"] == [] and changes["restarts"] == []
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


def test_a_mig_gpu_cut_into_other_profiles_is_a_recut():
    """GPU 1 stays in MIG mode but is fixed to the layout its host_vars comment suggests
    (3g.71gb + 2g.35gb + 2 x 1g.18gb) instead of the planned 4g.71gb + 1g.35gb + 2 x 1g.18gb:
    a re-cut, though the mode is mig before and after. By hand: classifier (6 GiB) and
    embeddings (12 GiB) keep a 1g.18gb and restart in place; speech-to-text (20 GiB) finds no
    1g.35gb and asks for the 2g.35gb, a manifest change for production."""
    variables, text = _first()
    gpu1 = variables["gpushare_nodes"]["gpu01"]["gpus"][1]
    gpu1["mig_layout"] = {"3g.71gb": 1, "2g.35gb": 1, "1g.18gb": 2}
    plan, changes = plan_and_changes(variables, text, (), "plan.json")
    assert changes["repartitioned"] == ["gpu01 GPU 1"]
    gpu = next(g for g in changes["gpus"] if g["gpu"] == 1)
    assert (gpu["old"], gpu["new"], gpu["repartitioned"]) == (
        "MIG 2 x 1g.18gb + 1 x 1g.35gb + 1 x 4g.71gb", "MIG 2 x 1g.18gb + 1 x 2g.35gb + 1 x 3g.71gb", True)
    restarts = {r["workload"]: r for r in changes["restarts"]}
    assert set(restarts) == {"classifier", "embeddings", "speech-to-text"}
    assert restarts["speech-to-text"]["manifest"] == \
        "ask for nvidia.com/mig-2g.35gb: 1 instead of nvidia.com/mig-1g.35gb: 1"
    assert [x["why"] for x in restarts["speech-to-text"]["reasons"]] == ["new resource", "re-cut GPU"]
    assert restarts["classifier"]["manifest"] is None and "in place" in restarts["classifier"]["reasons"][0]["text"]
    assert changes["against"] == {"file": "plan.json", "sha256": hashlib.sha256(text.encode()).hexdigest()}


def _run(plan_dir, variables):
    """One plan.yml run against the plan directory: the previous plan as the module reads it,
    every file of the plan directory written."""
    path = previous_plan_path(str(plan_dir))
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else None
    plan, changes = plan_and_changes(variables, text, (), path)
    for f in plan_files(plan, changes):
        target = plan_dir / f["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f["content"])
    return changes


def test_pending_changes_stay_listed_until_a_plan_is_applied(tmp_path):
    variables = example_day()
    assert _run(tmp_path, variables)["previous"] is False
    first = (tmp_path / "plan.json").read_text()
    next(w for w in variables["gpushare_workloads"] if w["name"] == "speech-to-text")["memory_gib"] = 40
    second = _run(tmp_path, variables)
    assert [r["workload"] for r in second["restarts"]] == ["speech-to-text"]
    assert (tmp_path / "applied-plan.json").read_text() == first       # the plan the changes are against
    # A caller that still reads plan.json never replaces the recorded applied plan.
    stale = plan_and_changes(variables, (tmp_path / "plan.json").read_text(), (), str(tmp_path / "plan.json"))
    assert APPLIED_PLAN not in [f["path"] for f in plan_files(*stale)]
    third = _run(tmp_path, variables)                                     # plan.yml again, nothing applied
    assert third["against"]["file"] == str(tmp_path / "applied-plan.json")
    assert (third["against"]["sha256"], third["restarts"]) == (second["against"]["sha256"], second["restarts"])
    assert json.loads((tmp_path / "changes.json").read_text())["restarts"] == second["restarts"]
    report = (tmp_path / "report.md").read_text()
    assert report.index("## Changes not applied yet") < report.index("## Servers and GPUs")
    assert "speech-to-text replica 0" in (tmp_path / "teams" / "production.md").read_text()
    # site.yml applied it: it records plan.json as applied-plan.json.
    (tmp_path / "applied-plan.json").write_text((tmp_path / "plan.json").read_text())
    fourth = _run(tmp_path, variables)
    assert not has_changes(fourth) and fourth["previous"] is True
    assert "## Changes not applied yet" not in (tmp_path / "report.md").read_text()


def test_site_records_the_applied_plan_where_the_plan_module_reads_it():
    tasks = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())[-1]["tasks"]
    record = next(t for t in tasks if "ansible.builtin.copy" in t)["ansible.builtin.copy"]
    assert record["src"].endswith("/" + PLAN_FILE) and record["dest"].endswith("/" + APPLIED_PLAN)
