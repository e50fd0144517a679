# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A proposal that always plans (repair.py): when the planner refuses the proposal as first
placed, the repairs keep what a team owns, narrow pools and move what does not fit to "GPUs to
buy", and the advice says which rule did what; "no change" only when no repair helps (said so)
or the usage gives no reason for one."""

from __future__ import annotations

import copy
import re

import usage_synth
from inventories import ROOT, example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice, repair, usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import InventoryProblem, PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"owner_name": "eve-gpu"}]}
H200 = gpu_catalog.CATALOG["h200-141gb"]


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def _plans(advice, variables):
    return build_plan(dict(variables, gpushare_workloads=advice["proposal"]["workloads"],
                           gpushare_nodes=advice["proposal"]["nodes"]))


def test_pools_that_take_the_training_gpu_are_repaired():
    """Five users holding 40 GiB each need two time-sliced H200s (5 x (40960 + 480) x 1.2 MiB >
    one card's usable memory); the second is the training team's GPU 3, which leaves the
    two-GPU fine-tune one whole GPU per server: the planner refuses. keep-owned gives GPU 3
    back to training, narrow-pools puts the five sharers on GPU 2; the missing card goes to
    "GPUs to buy"."""
    users = {u: 40960 for u in usage_synth.NOTEBOOK_USERS}
    assert 5 * (40960 + usage_synth.CONTEXT_MIB) * 1.2 > H200.memory_mib          # by hand: two cards
    usage, _truth = usage_synth.real_cluster_day(user_mib=users)
    variables = dict(example_inventory(), gpushare_advise_match=MATCH)
    advice = ua.advise(usage, variables)
    notebooks = _svc(advice, "notebooks")
    assert (notebooks["sharing"], notebooks["pool_gpus"]) == ("timeslice", 2)
    assert [r["rule"] for r in advice["repairs"]] == ["keep-owned", "narrow-pools"]
    assert advice["repairs"][0]["did"] == ("gpu01 GPU 3 back to team training (whole), which owns it; the proposal "
                                           "gave it to data-science")
    assert "needs 2 whole GPUs on one server" in advice["repairs"][0]["planner"][0]
    assert advice["repairs"][1]["did"].startswith("5 timeslice replicas wanted on 1 GPU (gpu01/2): 5 sharers per GPU")
    assert advice["plan_check"]["status"] == "repaired"
    plan = _plans(advice, variables)
    assert [g["mode"] for g in plan["nodes"][0]["gpus"]] == ["whole", "mig", "timeslice", "whole"]
    assert plan["nodes"][0]["gpus"][3]["team"] == "training"
    assert "timeslice pools (notebooks): 1 GPU short of the 2 their memory needs, after the repair narrow-pools" \
        in advice["buy"]["short"]
    report = render_advice.report_markdown(advice, [], advice["plan_check"]["text"])
    assert "## Repairs" in report and "- `keep-owned`: gpu01 GPU 3 back to team training" in report
    assert "- `narrow-pools`: 5 timeslice replicas wanted" in report


def _scaled(usage, pod_prefix: str, mib: float):
    """The history with the memory of the pods named POD_PREFIX... held at MIB."""
    usage = copy.deepcopy(usage)
    for s in usage.series:
        if s.pod and s.pod.startswith(pod_prefix) and s.fb_used is not None:
            s.fb_used = s.fb_used * 0 + mib
    return usage


def test_what_does_not_fit_goes_to_gpus_to_buy():
    """embeddings, classifier and speech-to-text grown to 60 GiB each need a 3g.71gb slice each
    (60 x 1.2 GiB: more than 2g.35gb, less than 71 GB). A 3g.71gb takes 4 of the H200's 8
    placement units, so one card holds two and nothing else: the third takes another team's
    GPU. keep-owned gives it back; then to-buy moves the MIG services out, the lowest priority
    team's largest first (all three alike: by name): classifier keeps its current entry
    (1g.18gb), which still does not fit beside two 3g.71gb; then embeddings (current: 1g.18gb);
    speech-to-text keeps its 3g.71gb."""
    usage = usage_synth.example_day(days=15, classifier_memory=True)
    for prefix in ("embeddings-", "classifier-", "speech-to-text-"):
        usage = _scaled(usage, prefix, 60 * 1024)
    variables = example_inventory()
    advice = ua.advise(usage, variables)
    for name in ("embeddings", "classifier", "speech-to-text"):
        assert _svc(advice, name)["mig_profile"] == "3g.71gb"
    assert [r["rule"] for r in advice["repairs"]] == ["keep-owned", "to-buy", "to-buy"], advice["repairs"]
    moved = [s["name"] for s in advice["services"] if s.get("repaired", {}).get("rule") == "to-buy"]
    assert sorted(moved) == ["classifier", "embeddings"]
    current = {w["name"]: w for w in variables["gpushare_workloads"]}
    proposed = {w["name"]: w for w in advice["proposal"]["workloads"]}
    for name in moved:
        assert proposed[name] == current[name]
        assert any(s.startswith("%s (" % name) and "to-buy" in s for s in advice["buy"]["short"])
    assert proposed["speech-to-text"]["mig_profile"] == "3g.71gb"
    assert advice["plan_check"]["status"] == "repaired"
    _plans(advice, variables)


def test_no_change_only_when_no_repair_helps_and_it_says_so():
    advice = ua.advise(usage_synth.example_day(days=15), example_inventory(), check=False)
    variables = example_inventory()
    current = variables["gpushare_workloads"]

    def planner(candidate):
        if candidate["gpushare_workloads"] is not current:
            raise PlanInvalid([InventoryProblem("gpushare_workloads", "refused for the test")])
        return {}
    check = repair.plan_proposal(advice, variables, plan=planner)
    assert check["status"] == "current"
    assert check["text"].startswith("the proposal could not be repaired, so the current inventory is kept (no change); "
                                    "the planner said: gpushare_workloads: refused for the test")
    assert advice["proposal"]["workloads"] == current
    assert render_advice.no_change_text(advice).startswith("no change: the proposal could not be repaired")
    assert all(s["repaired"] == {"rule": "current", "to": "current entry"} for s in advice["services"]
               if s["status"] == "ok")


def test_no_change_when_the_usage_gives_no_reason():
    advice = {"services": [{"name": "a", "status": "ok"}], "plan_check": {"status": "accepted"}}
    assert render_advice.no_change_text(advice) == \
        "no change against the current inventory: the usage gives no reason for one"
    advice["services"][0]["status"] = "not_enough_data"
    assert render_advice.no_change_text(advice) == "no change: no service could be advised (see each one's status)"


def test_the_example_day_needs_no_repair():
    advice = ua.advise(usage_synth.example_day(), example_inventory())
    assert advice["repairs"] == [] and advice["plan_check"] == {"status": "accepted", "problems": [], "text": "accepted"}


def test_repairs_are_named_and_documented_in_order():
    names = [r.name for r in ua.REPAIRS]
    assert len(names) == len(set(names))
    text = (ROOT / "docs" / "advisor.md").read_text()
    section = text[text.index("\n## Repairs\n"):]
    section = section[:section.index("\n## ", 1)]
    assert re.findall(r"^\| \d+ \| `([a-z-]+)` \|", section, re.M) == names
