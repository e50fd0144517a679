# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node that reported nothing for two days is in report.md (issue 33, item 14): presence is
measured over the time it reported (so vLLM is still always up), and the report says so instead
of "always up (100 % of the time)".

History: usage_synth.real_cluster_day(outage_day=6): gpu01, the only node, reports nothing from
day 6 00:00 to day 8 00:00 UTC: 48 h of the 28 days, 576 of 8064 samples (7.1 %), less than
max_gap (10 %), so its services are still advised."""

from __future__ import annotations

import datetime

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}


def _at(start: float, days: int) -> str:
    return datetime.datetime.fromtimestamp(start + days * 86400, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def test_a_two_day_outage_is_reported():
    usage, _truth = usage_synth.real_cluster_day(outage_day=6)
    advice = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH), check=False)
    assert advice["gaps"] == {}
    assert advice["outages"] == [{"node": "gpu01", "from": _at(usage.start, 6), "until": _at(usage.start, 8),
                                  "hours": 48.0, "share": round(576 / 8064.0, 3)}]
    vllm = next(s for s in advice["services"] if s["name"] == "vllm-chat")
    assert (vllm["status"], vllm["kind"]) == ("ok", "serving")
    assert "100 % of the time its nodes reported, 93 % of the window" in vllm["kind_why"]
    report = render_advice.report_markdown(advice, [], "not checked")
    assert "## Nodes that reported nothing" in report
    assert "- gpu01: from %s until %s (48 h, 7 %% of the window)" % (_at(usage.start, 6), _at(usage.start, 8)) in report
    assert "always up (100 % of the time)" not in report


def test_without_an_outage_nothing_is_reported():
    usage, _truth = usage_synth.real_cluster_day()
    advice = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH), check=False)
    assert advice["outages"] == []
    report = render_advice.report_markdown(advice, [], "not checked")
    assert "## Nodes that reported nothing" not in report and "its nodes reported" not in report
