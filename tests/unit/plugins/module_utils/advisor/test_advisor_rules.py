# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor's rules: ordered, named, their thresholds in Settings and in docs/advisor.md;
which rule decides each service of the synthetic histories and of each kind of card."""

from __future__ import annotations

import ast
import dataclasses
import re
from types import SimpleNamespace

import pytest

import usage_synth
from inventories import ROOT, example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice, rules, usage_advisor as ua

SETTINGS = {f.name: f.default for f in dataclasses.fields(ua.Settings)}


def _rules_section() -> str:
    text = (ROOT / "docs" / "advisor.md").read_text()
    start = text.index("\n## Rules\n")
    return text[start:text.index("\n## ", start + 1)]


def test_rule_names_are_unique_and_the_last_rule_always_holds():
    for table in (ua.KIND_RULES, ua.RULES):
        names = [r.name for r in table]
        assert len(names) == len(set(names)), names
    assert ua.KIND_RULES[-1].applies({}, ua.Settings())
    assert ua.RULES[-1].applies(None)


def test_rules_read_only_settings_that_exist():
    for rule in ua.KIND_RULES + ua.RULES:
        assert set(rule.settings) <= set(SETTINGS), (rule.name, rule.settings)


def test_docs_list_the_rules_in_order_with_their_settings():
    section = _rules_section()
    rows = re.findall(r"^\| \d+ \| `([a-z-]+)` \|(.*)$", section, re.M)
    assert [name for name, _rest in rows] == [r.name for r in ua.KIND_RULES + ua.RULES]
    for (name, rest), rule in zip(rows, ua.KIND_RULES + ua.RULES):
        for field in rule.settings:
            assert "`%s`" % field in rest, (name, field)


def test_docs_give_every_setting_with_its_default():
    section = _rules_section()
    for name in SETTINGS:
        assert "`%s`" % name in section, name
    pairs = re.findall(r"`([a-z_]+)` (\d+(?:\.\d+)?)\b", section)
    assert pairs
    for name, value in pairs:
        if name in SETTINGS:
            assert float(value) == SETTINGS[name], (name, value, SETTINGS[name])


def test_no_number_in_a_rule_outside_settings():
    """A comparison in rules.py is with a Settings field, 0 or 1 (a count), never a literal threshold."""
    tree = ast.parse((ROOT / "plugins" / "module_utils" / "advisor" / "rules.py").read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left] + node.comparators:
                if isinstance(side, ast.Constant) and isinstance(side.value, (int, float)) \
                        and not isinstance(side.value, bool) and side.value not in (0, 1):
                    found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
    assert found == []


# --------------------------------------------------------------------------- the synthetic histories


EXAMPLE_RULES = {"vllm-chat": "no-slice-fits", "embeddings": "mig-fits", "classifier": "mig-fits",
                 "speech-to-text": "mig-fits", "notebooks": "notebook-pool", "fine-tune": "runs-whole"}


@pytest.fixture(scope="module")
def advice():
    return ua.advise(usage_synth.example_day(), example_inventory())


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def test_example_day_rules(advice):
    assert {s["name"]: s.get("rule") for s in advice["services"]} == EXAMPLE_RULES
    vllm = _svc(advice, "vllm-chat")      # its flat reservation is its memory need: no slice holds it
    assert vllm["reservation"] and vllm["memory_need_mib"] > 90 * 1024


@pytest.mark.parametrize("history", [dict(duplicate_shared=True), dict(classifier_memory=True), dict(compact=True),
                                     dict(seed=7)])
def test_rules_hold_on_variants_of_the_history(history):
    out = ua.advise(usage_synth.example_day(**history), example_inventory())
    assert {s["name"]: s.get("rule") for s in out["services"]} == EXAMPLE_RULES


def test_no_rule_without_a_choice():
    out = ua.advise(usage_synth.example_day(gap_node="gpu01"), example_inventory())
    assert all(s["status"] == "not_enough_data" and "rule" not in s for s in out["services"])


def test_report_names_the_rule_of_each_service(advice):
    report = render_advice.report_markdown(advice, [], "accepted")
    assert "| choice | rule | status |" in report
    for name, rule in EXAMPLE_RULES.items():
        row = next(line for line in report.splitlines() if line.startswith("| %s |" % name))
        assert "| `%s` |" % rule in row
        assert "(rule `%s`)" % rule in report


def test_settings_move_the_decision():
    """The thresholds are read from Settings: no reservation when no line is flat enough."""
    out = ua.advise(usage_synth.example_day(), example_inventory(), ua.Settings(reservation_flatness=1.01))
    vllm = _svc(out, "vllm-chat")
    assert not vllm["reservation"] and "headroom" in vllm["memory_note"]


# --------------------------------------------------------------------------- each kind of card


def _features(**kw):
    base = {"presence": 1.0, "idle_share": 0.2, "idle_memory_mib": 2000.0, "active_share": 0.8,
            "day_concentration": 0.6, "busy_from": "08:00", "busy_until": "20:00", "runs": 1,
            "median_run_hours": 24 * 28.0, "gpus_per_replica": 1, "model": "h200-141gb", "memory_known": True,
            "memory_peak_mib": 8000.0, "memory_p5_mib": 2000.0, "capacity_mib": 143771.0, "pooled": False,
            "compute": 0.1, "saturated_share": 0.0, "saturated_fraction": None, "replicas": 1}
    base.update(kw)
    return base


def _choose(f, kind="serving", dra=False, **context):
    """choose() for one service on GPU 0 of server n1; ``context``: other fields of the advisor's
    context (settings, inventory)."""
    device = SimpleNamespace(key=("n1", 0, None), profile=None, capacity_mib=f["capacity_mib"])
    svc = SimpleNamespace(name="svc", devices={("n1", 0, None): device})
    ctx = SimpleNamespace(**{"settings": ua.Settings(), "dra_nodes": {"n1"} if dra else set(), **context})
    return rules.choose(ctx, svc, f, kind)


@pytest.mark.parametrize("features, kind, dra, rule, sharing", [
    (_features(), "serving", False, "mig-fits", "mig"),
    (_features(compute=0.95), "serving", False, "no-slice-fits", "whole"),
    (_features(), "serving", True, "dra-server", "dra"),
    (_features(model="l40s", capacity_mib=46068.0), "serving", False, "no-mig-card", "whole"),
    (_features(gpus_per_replica=2), "serving", False, "whole-default", "whole"),
    (_features(model=None), "serving", False, "whole-default", "whole"),
    (_features(replicas=4), "notebook", False, "notebook-pool", "timeslice"),
    (_features(pooled=True), "batch", False, "notebook-pool", "timeslice"),
    (_features(), "training", True, "runs-whole", "whole"),
])
def test_rule_for_each_case(features, kind, dra, rule, sharing):
    out = _choose(features, kind, dra)
    assert (out["rule"], out["sharing"]) == (rule, sharing), out


@pytest.mark.parametrize("features, settings, kind", [
    (_features(presence=0.95, idle_share=0.1), ua.Settings(), "serving"),
    (_features(presence=0.95, idle_share=0.1, median_run_hours=1.0), ua.Settings(serving_presence=0.99), "batch"),
    (_features(presence=0.95, idle_share=0.1), ua.Settings(serving_presence=0.99), "training"),
    (_features(idle_share=0.7, active_share=0.3, day_concentration=0.95), ua.Settings(), "notebook"),
    (_features(idle_share=0.7, active_share=0.3, day_concentration=0.95),
     ua.Settings(notebook_idle_memory_mib=4096.0), "serving"),
    (_features(presence=0.3, median_run_hours=1.5, gpus_per_replica=4), ua.Settings(batch_max_gpus=4), "batch"),
])
def test_kind_rules_read_their_settings(features, settings, kind):
    assert ua.detect_kind(features, settings)[0] == kind
