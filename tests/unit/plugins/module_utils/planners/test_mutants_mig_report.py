# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG solve report (docs/plan-format.md, ``mig_solve``) and the plan module's one line
when a layout is not proven optimal, written out by hand. Kills mig_planner.py mutants that
survived `make mutation` (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner

STAGES = [{"objective": "gpus_used", "status": "optimal", "value": 3},
          {"objective": "slice_memory_mib", "status": "time_limit", "value": 9},
          {"objective": "auto_gpus_converted", "status": "failed", "value": 1}]


def test_an_exact_solve_reports_no_seconds_and_a_time_limited_one_does():
    exact = mig_planner.MigSolve(exact=True, gap=0.0, seconds=1.26, time_limit=60.0, classes=4, stages=STAGES[:1])
    assert exact.as_dict() == {"exact": True, "gap": 0.0, "classes": 4, "stages": STAGES[:1]}
    limited = mig_planner.MigSolve(exact=False, gap=0.5, seconds=61.26, time_limit=60.0, classes=4, stages=STAGES)
    assert limited.as_dict() == {"exact": False, "gap": 0.5, "classes": 4, "stages": STAGES, "seconds": 61.3,
                                 "time_limit_s": 60.0}


def test_the_summary_line_names_the_stages_that_stopped_and_the_gap():
    assert mig_planner.summary_line(None) is None
    assert mig_planner.summary_line({"exact": True}) is None
    report = {"exact": False, "gap": 0.012345, "seconds": 61.26, "time_limit_s": 60, "stages": STAGES}
    assert mig_planner.summary_line(report, " (window night)") == (
        "MIG layout (window night): best found in 61.3 s, not proven optimal (slice_memory_mib, auto_gpus_converted "
        "stopped at the 60 s limit, gap 1.23 %)")
    # Every stage optimal: the stable re-planning stage stopped; no bound: the gap is unknown.
    assert mig_planner.summary_line({**report, "gap": None, "stages": STAGES[:1]}) == (
        "MIG layout: best found in 61.3 s, not proven optimal (gpus_repartitioned stopped at the 60 s limit, "
        "gap unknown)")
    # A tiny gap in %g's exponent form: 100 x 1e-7 = 1e-05 %.
    assert mig_planner.summary_line({**report, "gap": 1e-7}).endswith(", gap 1e-05 %)")
