# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.md's quota of each team inside a sharing window, with CPU and memory quota
(``cpu_memory_quota: proportional``): a window's ClusterQueues give memory as a Kubernetes
quantity ("512Gi"), which the report once formatted as a number and crashed on (issue 33
item 1; found by `tests/unit/fuzz_report.py 400 1 fleets`, 89 of 400 realistic fleets).

The expected figures are worked out here from the example inventory: gpu01 has 192 CPUs,
2048 GiB and 4 GPUs, so one whole GPU's share is 48 CPUs and 512 GiB; at night data-science
has GPU 2 whole."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg

from inventories import example_day


def _proportional_day() -> dict:
    v = example_day()
    v["gpushare_policy"]["cpu_memory_quota"] = "proportional"
    node = v["gpushare_nodes"]["gpu01"]
    assert (node["cpus"], node["memory_gib"], node["gpu_count"]) == (192, 2048, 4)   # the figures above
    return v


def test_window_quotas_with_cpu_and_memory_render_as_kueue_quantities():
    plan = build_plan(_proportional_day())
    report = report_markdown(plan)
    render_svg(plan)
    night = report.split("### Window night", 1)[1].split("###", 1)[0]
    row = next(line for line in night.splitlines() if line.startswith("| data-science |"))
    assert "48 `cpu` (cpu-memory)" in row
    assert "512Gi `memory` (cpu-memory)" in row
