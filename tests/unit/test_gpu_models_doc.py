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


def _usable_memory_rows() -> dict[str, dict[str, str]]:
    """key -> {profile: usable memory as the page writes it}, read back from the page."""
    section = PAGE.read_text().split("## Usable memory per MIG profile", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): dict(re.findall(r"([\w.]+): ([\d.]+ GiB)", m.group(2)))
            for m in re.finditer(r"^\| `([^`]+)` \| (.*) \|$", section, flags=re.M)}


def test_the_page_gives_the_usable_memory_of_each_mig_profile_in_gib():
    rows = _usable_memory_rows()
    # nvidia-smi mig -lgip: 9.50 GiB for an A100 80GB's 1g.10gb (NVIDIA MIG User Guide); 16384 MiB
    # for an H200's 1g.18gb (NVML, tests/fixtures/nvidia/h200/h200-nvml-mig-profiles.json).
    assert rows["a100-80gb"]["1g.10gb"] == "9.5 GiB"
    assert rows["h200-141gb"]["1g.18gb"] == "16 GiB"
    assert "l40s" not in rows and len(rows) >= 13


def test_ten_gib_gets_the_profile_after_1g_10gb_as_the_page_says():
    """The page's example: memory_gib: 10 does not fit 1g.10gb (9.5 GiB) on an A100 80GB."""
    v = example_day()
    v["gpushare_nodes"] = {"gpu01": {"gpu_model": "a100-80gb", "gpu_count": 1, "gpus": [{"index": 0, "mode": "mig"}]}}
    v["gpushare_workloads"] = [{"name": "ten", "team": "production", "kind": "serving", "sharing": "mig", "memory_gib": 10}]
    plan = build_plan(v)
    assert [s["profile"] for s in plan["workloads"][0]["slices"]] == ["1g.20gb"]
    assert "`memory_gib: 10` does not fit `1g.10gb` on `a100-80gb` (it holds 9.5 GiB)" in PAGE.read_text().replace("\n", " ")
