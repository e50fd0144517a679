# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sharing-mode table: what the inventory accepts, and that each layer that draws or
reports a GPU has one function per mode and no mode's name written out elsewhere."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import sharing_modes
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_report, render_svg
from inventories import ROOT


def test_inventory_words_as_documented():
    """The values README.md and the plan module's documentation promise (written out here,
    not read from the table)."""
    assert sharing_modes.GPU_MODES == ("auto", "whole", "mig", "timeslice", "mps", "mig-dynamic")
    # A window never switches a GPU to or from dynamic MIG (docs/dynamic-mig.md).
    assert sharing_modes.WINDOW_MODES == ("whole", "mig", "timeslice", "mps")
    assert sharing_modes.WORKLOAD_SHARING == ("whole", "mig", "timeslice", "mps", "dra", "mig-dynamic")
    assert sharing_modes.ISOLATION_TO_SHARING == {"full": "whole", "hardware": "mig", "none": "timeslice"}
    assert sharing_modes.isolation_choices() == "full=whole, hardware=mig or mig-dynamic, none=timeslice or mps"
    assert sharing_modes.SHARED_MODES == ("timeslice", "mps")
    assert sharing_modes.modes_without_mig() == "whole, timeslice, mps, auto"


@pytest.mark.parametrize("registry", [render_report.GPU_LINES, render_svg.GPU_BARS],
                         ids=["render_report.GPU_LINES", "render_svg.GPU_BARS"])
def test_every_gpu_mode_has_its_function(registry):
    assert set(registry) == set(sharing_modes.GPU_MODES) - {sharing_modes.AUTO}


# A mode's name compared or listed in code: `== "mps"`, `("timeslice", "mps")`.
MODE_NAME = "|".join(sharing_modes.MODES)
WRITTEN_OUT = re.compile(r'(?:[=!]= "(?:%s)")|(?:\("(?:%s)", "(?:%s)"\))' % (MODE_NAME, MODE_NAME, MODE_NAME))


def test_no_mode_name_written_out_in_module_utils():
    found = []
    for path in sorted((ROOT / "plugins" / "module_utils").rglob("*.py")):
        if path.name == "sharing_modes.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if WRITTEN_OUT.search(line):
                found.append("%s:%d: %s" % (path.relative_to(ROOT), number, line.strip()))
    assert found == []
