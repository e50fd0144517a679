# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A sharing window that stays inside one day (09:00 to 17:00), in report.md and split.svg
(issue 33 item 4). Every other window of the tests crosses midnight (19:00 to 07:00), so a
window read as crossing midnight whatever its hours (it then covers the whole day, and the
base state shows as "all day") passed them all. The hours expected here are written by hand:
the window from 09:00 to 17:00, the base state the rest of the day, 17:00 to 09:00."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window, build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg

from inventories import example_day


def office_hours_plan() -> dict:
    v = example_day()
    window = v["gpushare_nodes"]["gpu01"]["gpus"][2]["schedule"][0]
    window.update({"name": "office", "from": "09:00", "until": "17:00"})
    return build_plan(v)


def test_report_gives_the_window_and_the_base_state_their_own_hours():
    headings = re.findall(r"^### .*$", report_markdown(office_hours_plan()), flags=re.M)
    assert headings == ["### Base state (17:00 to 09:00 UTC)", "### Window office (09:00 to 17:00 UTC)"]


def test_picture_gives_the_window_and_the_base_state_their_own_hours():
    texts = ["".join(t.itertext()) for t in ET.fromstring(render_svg(office_hours_plan())).iter(
        "{http://www.w3.org/2000/svg}text")]
    titles = [t for t in texts if re.match(r"^(\d\d:\d\d to|All day)", t)]
    assert titles == ["17:00 to 09:00 UTC: base state (outside every window)", "09:00 to 17:00 UTC: window office"]


def test_the_window_is_in_force_from_nine_to_five_only():
    plan = office_hours_plan()
    inside = {clock: (active_window(plan, clock) or {}).get("name") for clock in ("08:59", "09:00", "16:59", "17:00")}
    assert inside == {"08:59": None, "09:00": "office", "16:59": "office", "17:00": None}
