# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How mig_planner drives HiGHS (_stages, _any_layout): the options of each stage, and what the
plan says when a stage stops at the time limit, with or without a layout, reports a numerical
"infeasible", or fails. Real fleets at the time limit are slow and depend on the machine, so
scipy.optimize.milp is wrapped: every call still goes to HiGHS and is recorded, and a chosen
call's answer is replaced by what HiGHS answers in those cases (status codes from scipy's
milp documentation: 0 optimal, 1 iteration or time limit, 2 infeasible, 3 unbounded, 4
other)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from scipy.optimize import OptimizeResult

from mig_cases import CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigShortfall, MigSolve, plan_mig)

# The services on the cut H200 (mig_cases.NOW).
SERVICES = [MigDemand("a", "t", 0, 20 * GIB, (H200,)), MigDemand("b", "t", 0, 10 * GIB, (H200,)),
            MigDemand("b", "t", 1, 10 * GIB, (H200,))]
REAL_MILP = scipy.optimize.milp
STABLE_STAGES = ["gpus_repartitioned", "auto_gpus_converted", "gpus_used", "slice_memory_mib", "replicas_kept"]


class _HiGHS:
    """scipy.optimize.milp, recorded; ``faults`` maps a call's index to a function of HiGHS's
    real answer that returns the answer the planner gets instead."""

    def __init__(self, monkeypatch, faults=None):
        self.real = REAL_MILP
        self.faults = faults or {}
        self.calls = []
        monkeypatch.setattr(scipy.optimize, "milp", self)

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs, len(kwargs.get("constraints") or ())))
        result = self.real(*args, **kwargs)
        fault = self.faults.get(len(self.calls) - 1)
        return fault(result) if fault else result

    def objective(self, i):
        args, kwargs, _n = self.calls[i]
        return np.asarray(args[0] if args else kwargs["c"])


def _stopped(status, keep_x=False, gap=None, message="stopped"):
    def fault(result):
        return OptimizeResult(status=status, x=result.x if keep_x else None, message=message,
                              mip_gap=gap if keep_x else None, success=False)
    return fault


def _stable(solve=None):
    solve = solve if solve is not None else MigSolve()
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW)], True, solve=solve)
    return {k: [(s.profile, s.start, s.workload, s.replica) for s in v.slices] for k, v in layouts.items()}, solve


def _fresh(solve=None, time_limit=20.0):
    """Two auto H200s, a 60 GiB service and the three above, planned from scratch."""
    solve = solve if solve is not None else MigSolve()
    demands = SERVICES + [MigDemand("c", "t", 0, 60 * GIB, (H200,))]
    candidates = [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)]
    layouts = plan_mig(demands, candidates, True, time_limit=time_limit, solve=solve)
    return {k: sorted((s.profile, s.workload) for s in v.slices if s.workload) for k, v in layouts.items()}, solve


def test_each_stage_is_solved_to_a_zero_gap_within_the_time_limit_presolve_off_for_memory_and_kept(monkeypatch):
    highs = _HiGHS(monkeypatch)
    layouts, solve = _stable()
    assert layouts == {("n1", 0): list(NOW)}
    stage_calls = highs.calls[:5]
    assert [kw["options"] for _a, kw, _n in stage_calls] == [
        {"time_limit": 20.0, "mip_rel_gap": 0.0, "presolve": presolve} for presolve in (True, True, True, False, False)]
    # Each stage keeps the ones before at their values: one more constraint each.
    assert [n for _a, _kw, n in stage_calls] == [1, 2, 3, 4, 5]
    assert (solve.exact, solve.gap) == (True, 0.0)
    assert [s["objective"] for s in solve.stages] == STABLE_STAGES[1:4]
    assert all(s["status"] == "optimal" for s in solve.stages)
    # The first and last objectives: nothing re-partitioned, the three replicas kept in place.
    assert {k: v for k, v in solve.stable.items() if k != "seconds"} == \
        {"objective": "gpus_repartitioned", "status": "optimal", "value": 0}
    assert {k: v for k, v in solve.stays.items() if k != "seconds"} == \
        {"objective": "replicas_kept", "status": "optimal", "value": 3}
    # Measured (a solve takes time), not the 0.0 written when nothing was solved.
    for seconds in solve.stage_seconds + [solve.stable["seconds"], solve.stays["seconds"]]:
        assert 0.0 < seconds < 60.0
    assert len(solve.stage_seconds) == 3


def test_a_numerical_infeasible_after_a_layout_is_solved_again_with_presolve_turned_round(monkeypatch):
    # The memory stage (the fourth, presolve off) answers "infeasible" although the previous
    # stage's layout meets its constraints: the same stage again, presolve on.
    plain = _stable()[0]
    highs = _HiGHS(monkeypatch, {3: _stopped(2)})
    layouts, solve = _stable()
    assert layouts == plain
    (a3, kw3, n3), (a4, kw4, n4) = highs.calls[3], highs.calls[4]
    assert np.array_equal(highs.objective(3), highs.objective(4)) and n3 == n4 == 4
    assert kw4["options"] == {"time_limit": 20.0, "mip_rel_gap": 0.0, "presolve": True}
    assert kw3["options"]["presolve"] is False
    assert kw4["integrality"] is kw3["integrality"] and kw4["bounds"] is kw3["bounds"]
    assert len(highs.calls) == 6 and (solve.exact, solve.gap) == (True, 0.0)


def test_infeasible_at_the_first_stage_is_a_shortfall_that_names_the_services(monkeypatch):
    _HiGHS(monkeypatch, {0: _stopped(2)})
    with pytest.raises(MigShortfall) as raised:
        _stable()
    assert str(raised.value).startswith("the MIG services do not fit on the GPUs that may be cut with MIG:")


def test_a_first_stage_stopped_without_a_layout_finds_any_layout_then_goes_on(monkeypatch):
    plain_layouts, plain = _fresh()
    highs = _HiGHS(monkeypatch, {0: _stopped(1)})
    layouts, solve = _fresh()
    # Call 1 looks for any layout: zero objective, the same constraints and integrality, no time limit.
    args, kwargs, n = highs.calls[1]
    assert not highs.objective(1).any() and n == 1 and "options" not in kwargs
    assert kwargs["integrality"] is highs.calls[0][1]["integrality"]
    # The first stage reports the layout it was left with (one or both GPUs converted); the later
    # stages still reach the optimum: all four services on one H200 (3g.71gb at 4, 2g.35gb at 0,
    # 1g.18gb at 2 and 3 fill its 8 slices), the same memory as without the stop.
    assert solve.stages[0]["value"] in (1, 2) and plain.stages[0]["value"] == 1
    assert [s["value"] for s in solve.stages][1:] == [s["value"] for s in plain.stages][1:]
    assert plain.stages[1]["value"] == 1
    assert sorted(layouts.values()) == sorted(plain_layouts.values())
    assert [s["status"] for s in solve.stages] == ["time limit", "optimal", "optimal"]
    assert (solve.exact, solve.gap) == (False, None)
    # Not exact: the report carries the time limit and the seconds the solve took.
    report = solve.as_dict()
    assert report["time_limit_s"] == 20.0 and 0.0 <= report["seconds"] < 60.0


def test_stages_stopped_with_a_layout_report_the_largest_gap(monkeypatch):
    _HiGHS(monkeypatch, {0: _stopped(1, keep_x=True, gap=0.03), 1: _stopped(1, keep_x=True, gap=0.01)})
    _layouts, solve = _fresh()
    assert [s["status"] for s in solve.stages] == ["time limit", "time limit", "optimal"]
    assert (solve.exact, solve.gap) == (False, 0.03)


def test_a_stage_stopped_without_a_better_layout_keeps_the_last_and_has_no_gap(monkeypatch):
    plain_layouts, plain = _fresh()
    _HiGHS(monkeypatch, {1: _stopped(1, keep_x=True, gap=0.02), 2: _stopped(1)})
    layouts, solve = _fresh()
    # The memory stage found nothing: the gpus_used stage's layout stays, and no bound is known.
    assert [s["status"] for s in solve.stages] == ["optimal", "time limit", "time limit"]
    assert (solve.exact, solve.gap) == (False, None)
    assert [s["value"] for s in solve.stages][:2] == [s["value"] for s in plain.stages][:2]


def test_the_replicas_kept_stage_stopping_leaves_the_plan_exact(monkeypatch):
    _HiGHS(monkeypatch, {4: _stopped(1, keep_x=True, gap=0.5)})
    layouts, solve = _stable()
    assert layouts == {("n1", 0): list(NOW)}
    assert solve.stays["status"] == "time limit" and (solve.exact, solve.gap) == (True, 0.0)


def test_an_unknown_status_is_reported_as_failed(monkeypatch):
    _HiGHS(monkeypatch, {2: _stopped(7, keep_x=True)})
    _layouts, solve = _fresh()
    assert [s["status"] for s in solve.stages] == ["optimal", "optimal", "failed"]
    assert solve.exact is False


def test_no_layout_at_all_is_a_shortfall_or_names_what_highs_said(monkeypatch):
    _HiGHS(monkeypatch, {0: _stopped(1), 1: _stopped(2)})
    with pytest.raises(MigShortfall) as raised:
        _fresh()
    assert str(raised.value).startswith("the MIG services do not fit on the GPUs that may be cut with MIG:")
    _HiGHS(monkeypatch, {0: _stopped(1), 1: _stopped(4, message="model error")})
    with pytest.raises(MigShortfall) as raised:
        _fresh()
    assert str(raised.value) == "the MIG programme could not be solved: model error"


def test_later_stages_keep_the_earlier_objectives_even_where_a_re_cut_would_give_less_memory():
    # a now needs 10 GiB and sits on the 3g.71gb at 4. Re-cutting the GPU would give it a 1g.18gb
    # (16384 MiB) but re-partition a GPU, which the first objective holds at 0; within the kept
    # layout the least memory is the spare 2g.35gb at 0 (33024 MiB): a moves there. Memory given
    # 33024 + 2 x 16384 = 65792 MiB.
    now = (("2g.35gb", 0, None, None), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1), ("3g.71gb", 4, "a", 0))
    solve = MigSolve()
    demands = [MigDemand("a", "t", 0, 10 * GIB, (H200,))] + SERVICES[1:]
    layouts = plan_mig(demands, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, now)], True, solve=solve)
    assert [(s.profile, s.start, s.workload, s.replica) for s in layouts[("n1", 0)].slices] == [
        ("2g.35gb", 0, "a", 0), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1), ("3g.71gb", 4, None, None)]
    assert (solve.repartitioned, solve.moved) == (0, 1)
    assert solve.stages[-1] == {"objective": "slice_memory_mib", "status": "optimal", "value": 65792}


def test_a_stable_re_plan_stopped_at_the_limit_reports_its_seconds(monkeypatch):
    _HiGHS(monkeypatch, {1: _stopped(1, keep_x=True, gap=0.01)})
    layouts, solve = _stable()
    assert layouts == {("n1", 0): list(NOW)}
    report = solve.as_dict()
    assert (report["exact"], report["gap"]) == (False, 0.01) and 0.0 <= report["seconds"] < 60.0


def test_when_a_mix_of_patterns_cannot_be_cut_from_whole_gpus_everything_is_solved_again_whole(monkeypatch):
    # The first pass's patterns made "uncuttable" (whole_gpus answers None once): _solve solves
    # again with whole GPUs per pattern, under the same time limit, and says so.
    plain_layouts, plain = _fresh()
    real = mig_planner._Programme.whole_gpus
    calls = []

    def uncuttable_once(self, values):
        calls.append(1)
        return None if len(calls) == 1 else real(self, values)
    monkeypatch.setattr(mig_planner._Programme, "whole_gpus", uncuttable_once)
    highs = _HiGHS(monkeypatch)
    layouts, solve = _fresh()
    assert solve.whole_patterns is True and plain.whole_patterns is False
    assert sorted(layouts.values()) == sorted(plain_layouts.values())
    assert [s["value"] for s in solve.stages] == [s["value"] for s in plain.stages]
    second = highs.calls[3:6]
    assert [kw["options"]["time_limit"] for _a, kw, _n in second] == [20.0] * 3
    # Whole GPUs per pattern: the pattern columns, which come first, are integers now; every
    # other column keeps its integrality (the replicas' routes stay continuous).
    first, again = highs.calls[0][1]["integrality"], second[0][1]["integrality"]
    made_whole = [i for i in range(len(first)) if first[i] == 0 and again[i] == 1]
    assert made_whole and made_whole == list(range(len(made_whole)))
    assert all(first[i] == again[i] for i in range(len(made_whole), len(first)))
