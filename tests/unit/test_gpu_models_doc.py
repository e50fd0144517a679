"""docs/gpu-models.md is the catalogue's page as generated (tests/unit/gen_gpu_models_doc.py),
and every name it lists plans: the planner reads each one as its model (checked through the
inventory, not through the generator)."""
from __future__ import annotations

import re

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from gen_gpu_models_doc import PAGE, page

from inventories import example_day


def test_the_page_is_generated_from_the_catalogue():
    assert PAGE.read_text() == page(), "stale: run tests/unit/gen_gpu_models_doc.py"


def rows() -> list[tuple[str, list[str]]]:
    """(key, every name on its row) read back from the page."""
    out = []
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`") and cells[0] != "`key`":
            names = [cells[1]] + re.findall(r"`([^`]+)`", " ".join(cells[:5]))
            out.append((cells[0].strip("`"), names))
    return out


def test_the_page_lists_every_model():
    assert len(rows()) >= 18


@pytest.mark.parametrize("key, names", rows())
def test_every_name_on_the_page_plans_as_its_model(key, names):
    for name in names:
        v = example_day()
        v["gpushare_nodes"] = {"gpu01": {"gpu_model": name, "gpu_count": 1, "gpus": [{"index": 0, "mode": "whole"}]}}
        v["gpushare_workloads"] = []
        plan = build_plan(v)
        assert plan["nodes"][0]["model"] == key, name
