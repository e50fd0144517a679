# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzzing the planner with mutated example inventories (issue 9 §7, docs/testing.md) and
with realistic fleets (fleets.py: 32 servers, 10 teams, 50 workloads).

Whatever a person writes in the inventory, build_plan either returns a plan that is valid
JSON and feasible (plan_oracle) and that the report, the split table and the picture
(report.md, split.svg) render, or raises PlanInvalid whose problems each name an inventory
path; it never raises anything else and never takes more than 10 s of CPU time. The edits
are in mutations.py.

Runs GPUSHARE_FUZZ_EXAMPLES examples (default below) per example inventory, derandomized so
CI sees the same examples on every run; set the variable higher to search longer.
"""

from __future__ import annotations

import copy
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown, split_table
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_svg import render_svg

import plan_oracle
from fleets import fleet
from inventories import EXAMPLE_NAMES, load_example
from mutations import PATH_PREFIXES, mutate, replaced_paths

# A bound on pathological slowness (an exponential search, a loop over 10**30), not a
# performance target: a mutated example plans in well under a second. Measured as this
# process's CPU time, so a busy CI machine (other jobs on the same cores) cannot fail it.
SECONDS_PER_INVENTORY = 10.0
# Per example inventory; three inventories -> 3 x this many in `make test`.
EXAMPLES = int(os.environ.get("GPUSHARE_FUZZ_EXAMPLES", 700))
# Realistic fleets plan in about 0.1 s each: fewer of them.
FLEETS = int(os.environ.get("GPUSHARE_FUZZ_FLEETS", 150))

BASE = {name: load_example(name) for name in EXAMPLE_NAMES}


def check_plan(variables: dict, replaced: tuple[str, ...] = ()) -> dict | None:
    """Plan ``variables`` and assert the three properties; the plan, or None when invalid.

    Anything but PlanInvalid propagates: that is the crash the fuzzer is looking for.
    ``replaced``: inventory paths holding a value an edit wrote; when problems are reported
    at exactly such a path, one of them must show the value.
    """
    start = time.process_time()
    plan, problems, text = None, [], ""
    try:
        plan = build_plan(variables)
    except PlanInvalid as invalid:
        problems = invalid.problems
        text = str(invalid)   # what the module prints; must not fail on odd values
    elapsed = time.process_time() - start
    assert elapsed < SECONDS_PER_INVENTORY, "planning took %.1f s of CPU time" % elapsed
    if plan is not None:
        # allow_nan=False: NaN and Infinity are not JSON, and plan.json is read by other tools.
        json.dumps(plan, allow_nan=False)
        # ... and can run: layouts on the placement grid, every MIG replica served, quotas equal
        # to what the nodes advertise (plan_oracle, which shares no code with the planners).
        assert plan_oracle.problems(plan, variables) == []
        # ... and what plan.yml writes beside plan.json renders (a crash there is a bare module failure).
        for render in (report_markdown, split_table, render_svg):
            render(plan)
        return plan
    assert problems, "PlanInvalid without problems"
    for p in problems:
        assert isinstance(p.path, str) and p.path.startswith(PATH_PREFIXES), \
            "problem path %r does not name an inventory path: %s" % (p.path, p)
        assert str(p) in text
    for path in replaced:
        # A value the person wrote is relevant: when problems point at it, one shows it
        # (others there may be consequences, e.g. "needs an owning team" after a bad team).
        here = [p for p in problems if p.path == path]
        assert not here or any(getattr(p, "has_value", p.value is not None) and "(got " in str(p) for p in here), \
            "no problem at the replaced path shows the value: %s" % here[0]
    return None


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_inventory_plans_or_names_its_problems(name, data):
    variables = copy.deepcopy(BASE[name])
    edits = mutate(data, variables)
    for edit in edits:
        note(edit)   # printed with the failing example
    check_plan(variables, replaced_paths(edits, variables))


@settings(max_examples=FLEETS, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_realistic_fleet_plans_and_renders_or_names_its_problems(data):
    check_plan(fleet(data))
