# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lending window of idle pools and the idle hours it is made of, worked out by hand
(runs of a circular day, longest first).
"""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import proposal


def test_a_circular_day_has_its_longest_idle_run_first():
    hours = [h in (0, 1, 2, 10, 11, 12, 20, 21, 22, 23) for h in range(24)]
    # 20:00 to 03:00 runs over midnight: 7 hours, before 10:00-13:00 (3).
    assert proposal._circular_runs(hours) == [(20, 7), (10, 3)]
    # Equal lengths: the earlier start first.
    assert proposal._circular_runs([h in (15, 5) for h in range(24)]) == [(5, 1), (15, 1)]


# --------------------------------------------------------------------------- windows in which idle pools lend

def _window_ctx(min_window_hours=4):
    teams = [SimpleNamespace(name=n, lend=lend, borrow=borrow) for n, lend, borrow in (
        ("prod", False, False), ("ds", True, False), ("research", True, True), ("tr", True, True),
        ("bt", True, True), ("srv", True, True))]
    return SimpleNamespace(
        settings=SimpleNamespace(min_window_hours=min_window_hours, idle_hour_percentile=90, idle_activity=0.7),
        inventory=SimpleNamespace(teams=teams, policy=SimpleNamespace(timezone="UTC")))


def _pool(team, name, hours, gpus):
    return {"team": team, "name": name, "idle_hours": list(hours)}, gpus


ADVISED = [{"team": "tr", "kind": "training"}, {"team": "bt", "kind": "batch"}, {"team": "srv", "kind": "serving"}]


def test_a_window_covers_the_hours_every_lending_pool_is_idle():
    pools = [
        _pool("prod", "prod-pool", range(24), [("gpu03", 0)]),                # does not lend: never in a window
        _pool("ds", "notebooks", [*range(18, 24), *range(0, 6)], [("gpu01", 2)]),
        _pool("ds", "empty", [], []),                                          # no GPU: left out
        _pool("research", "labs", [*range(20, 24), *range(0, 7)], [("gpu02", 0), ("gpu01", 2)]),
    ]
    # Both lending pools idle together 20:00-06:00 (10 hours, over 03:00: "night"); training (tr) and batch (bt)
    # of borrowing teams may use it, serving (srv) does not; each GPU once, in the pools' order.
    assert proposal._windows(_window_ctx(), pools, ADVISED) == [{
        "name": "night", "from": "20:00", "until": "06:00", "mode": "whole",
        "gpus": [["gpu01", 2], ["gpu02", 0]], "teams": ["ds", "research"], "for": ["bt", "tr"],
        "why": "labs, notebooks idle from 20:00 to 06:00 UTC (90th percentile of activity below 70 %) on every day "
               "of the window; whole then, so bt and tr can borrow it through Kueue"}]


def test_a_window_is_at_least_min_window_hours_and_never_the_whole_day():
    four = [_pool("ds", "notebooks", range(9, 13), [("gpu01", 2)])]
    window = proposal._windows(_window_ctx(min_window_hours=4), four, ADVISED)
    assert [(w["name"], w["from"], w["until"]) for w in window] == [("idle", "09:00", "13:00")]   # 03:00 not in it
    assert proposal._windows(_window_ctx(min_window_hours=5), four, ADVISED) == []
    always = [_pool("ds", "notebooks", range(24), [("gpu01", 2)])]
    assert proposal._windows(_window_ctx(), always, ADVISED) == []


def test_runs_of_a_circular_day_longest_first_then_by_start():
    assert proposal._circular_runs([True, True, True]) == [(0, 3)]
    assert proposal._circular_runs([False, True, False]) == [(1, 1)]
    assert proposal._circular_runs([False, False, True]) == [(2, 1)]
    assert proposal._circular_runs([True, False, True, True]) == [(2, 3)]           # 2, 3 and round to 0
    assert proposal._circular_runs([True, False, True, False]) == [(0, 1), (2, 1)]
    assert proposal._circular_runs([False, True, True, False, True]) == [(1, 2), (4, 1)]


def test_idle_hours_are_below_the_threshold_absent_or_unsampled():
    import numpy as np
    hours = np.arange(23)                                   # one sample for each hour 0-22; 23 has none
    act = np.full(23, 0.5)
    act[0], act[1], act[2] = 0.05, 0.01, 0.9                # 0: at the threshold, not below; 1: below
    present = np.ones(23, dtype=bool)
    present[2] = False                                      # 2: the service was not there
    ctx = SimpleNamespace(hours=hours, settings=SimpleNamespace(idle_hour_percentile=90, idle_activity=0.05))
    assert proposal.idle_hours(ctx, {"present": present, "act_rel": act}, slice(None)) == [1, 2, 23]
