# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static and dynamic MIG side by side (example static-and-dynamic-mig) in report.md and the
picture: the dynamic GPUs, their claims and the guaranteed quota. Numbers by hand and from the
brute force of tests/unit/mig_grid_oracle.py: two H200s hold 14 x 1g.18gb, so 15 x 1g.18gb
(15 x 16 GiB = 240 GiB) is the cheapest mix no placement holds; the memory counters hold
2 x 140 GiB."""

from __future__ import annotations

import re

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg

from inventories import load_example
from mig_grid_oracle import brute_force

PLAN = build_plan(load_example("static-and-dynamic-mig"))


def test_report_shows_both_kinds_of_mig_and_the_guarantee():
    report = report_markdown(PLAN)
    quota, unplaceable = brute_force(("1g.18gb", "1g.35gb", "3g.71gb"), 2)
    assert unplaceable == 15 * 16384
    assert "| h200-static | 0 | h200-141gb | inference | MIG: " in report
    assert "| h200-dynamic | 0 | h200-141gb | inference | dynamic MIG: slices made per claim" in report
    assert "| h200-141gb | 2 | 1g.18gb, 1g.35gb, 3g.71gb | %.2f GiB | 280.00 GiB | 15 x 1g.18gb (240.00 GiB) |" \
        % (quota / 1024.0) in report
    assert "| chat | inference | `chat-1g.35gb` | 1g.35gb | 33280 MiB |" in report
    assert "Kubernetes 1.35 or newer, with `DRAPartitionableDevices`" in report


def test_picture_draws_the_dynamic_gpus_with_their_claims():
    svg = render_svg(PLAN)
    texts = " ".join(re.sub(r"<[^>]+>", " ", svg).split())
    assert texts.count("dynamic MIG") >= 2
    for name in ("chat 1g.35gb (inference)", "embedder 1g.18gb (inference)", "eval 3g.71gb (research)"):
        assert name in texts, name
