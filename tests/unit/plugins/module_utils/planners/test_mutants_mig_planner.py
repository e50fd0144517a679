# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stable re-planning (mig_planner.plan_mig from a current state) on one or two H200s, worked
out by hand: a fast direct check of _plan_stable, _realise_stable and _Stable, whose mutants no
other test of mig_planner's `make mutation` selection reaches (test_mig_stable.py checks them
against brute force but costs about a minute per mutant; docs/testing.md, "Mutation testing").

Placements and memory from the NVIDIA MIG User Guide's H200 table (docs/gpu-facts.md): on the
8-slice grid 1g.18gb starts at 0..6 (size 1, 16384 MiB), 2g.35gb at 0, 2, 4 (size 2, 33024 MiB),
3g.71gb at 0 or 4 (size 4, 71168 MiB), 4g.71gb only at 0 (size 4), 7g.141gb at 0 (size 8).
"""

from __future__ import annotations

from mig_cases import CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigSolve, plan_mig)


def _cut_gpu():
    return MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW)


def _whole_auto_gpu():
    return MigCandidate("n1", 1, H200, False, "t", None, (), None, ())


def _services(a_gib=20, *more):
    return [MigDemand("a", "t", 0, a_gib * GIB, (H200,)), MigDemand("b", "t", 0, 10 * GIB, (H200,)),
            MigDemand("b", "t", 1, 10 * GIB, (H200,))] + list(more)


def _replan(demands, candidates):
    solve = MigSolve()
    layouts = plan_mig(demands, candidates, True, solve=solve)
    return {key: [(s.profile, s.start, s.workload, s.replica) for s in layout.slices]
            for key, layout in layouts.items()}, solve


def test_services_that_still_fit_keep_their_slices_where_they_are():
    layouts, solve = _replan(_services(), [_cut_gpu()])
    assert layouts == {("n1", 0): list(NOW)}
    assert solve.repartitioned == 0 and solve.stable["value"] == 0
    # Planned from scratch the GPU would be cut otherwise (smaller slices first), so keeping is a choice.
    fresh = plan_mig(_services(), [MigCandidate("n1", 0, H200, True, "t")], True)
    assert fresh[("n1", 0)].counts() != dict(CUT)


def test_a_grown_service_moves_to_the_spare_slice_without_re_partitioning():
    # a now needs 60 GiB: more than 2g.35gb's 33024 MiB, within the spare 3g.71gb's 71168 MiB.
    layouts, solve = _replan(_services(60), [_cut_gpu()])
    assert layouts == {("n1", 0): [("2g.35gb", 0, None, None), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1),
                                   ("3g.71gb", 4, "a", 0)]}
    assert solve.repartitioned == 0


def test_a_service_pinned_to_the_full_card_re_partitions_the_gpu():
    layouts, solve = _replan([MigDemand("big", "t", 0, GIB, (H200,), "7g.141gb")], [_cut_gpu()])
    assert layouts == {("n1", 0): [("7g.141gb", 0, "big", 0)]}
    assert solve.repartitioned == 1 and solve.stable["value"] == 1


def test_a_gpu_not_in_mig_mode_is_cut_only_when_the_kept_one_is_full():
    layouts, solve = _replan(_services(), [_cut_gpu(), _whole_auto_gpu()])
    assert layouts == {("n1", 0): list(NOW)} and solve.repartitioned == 0
    # c and d need 60 GiB each: one takes GPU 0's spare 3g.71gb, the other a 3g.71gb on GPU 1, which
    # then holds 3g.71gb at 4 and the rest of the grid carved as the one profile that fits cells 0-3
    # whole, 4g.71gb at 0. GPU 1 counts as re-partitioned (it was not in MIG mode).
    more = (MigDemand("c", "t", 0, 60 * GIB, (H200,)), MigDemand("d", "t", 0, 60 * GIB, (H200,)))
    layouts, solve = _replan(_services(20, *more), [_cut_gpu(), _whole_auto_gpu()])
    kept, new = layouts[("n1", 0)], layouts[("n1", 1)]
    assert kept[:3] == list(NOW[:3]) and kept[3][:2] == ("3g.71gb", 4)
    assert sorted(s[:2] for s in new) == [("3g.71gb", 4), ("4g.71gb", 0)]
    assert {kept[3][2]} | {s[2] for s in new if s[0] == "3g.71gb"} == {"c", "d"}
    assert solve.repartitioned == 1


def test_a_new_replica_takes_the_spare_slice_and_the_others_stay():
    # b's third replica (10 GiB) has no free 1g.18gb; the spare 3g.71gb hosts it, so nothing is re-cut.
    layouts, solve = _replan(_services(20, MigDemand("b", "t", 2, 10 * GIB, (H200,))), [_cut_gpu()])
    assert layouts == {("n1", 0): list(NOW[:3]) + [("3g.71gb", 4, "b", 2)]}
    assert solve.repartitioned == 0


def test_with_no_service_left_the_cut_gpus_keep_their_layout_as_spare_slices():
    # Nothing to host is no reason to drain: the declared GPU keeps its slices, all spare now, the
    # auto GPU stays whole, and the report says no GPU was re-partitioned without solving anything.
    layouts, solve = _replan([], [_cut_gpu(), _whole_auto_gpu()])
    assert layouts == {("n1", 0): [(profile, start, None, None) for profile, start, _w, _r in NOW]}
    assert solve.stable == {"objective": "gpus_repartitioned", "status": "optimal", "value": 0, "seconds": 0.0}
    # A GPU declared mig that is not in MIG mode yet is cut all the same, the leftover carved
    # as the one profile that spans the grid: 7g.141gb at 0.
    declared = MigCandidate("n1", 1, H200, True, "t", None, (), None, ())
    layouts = _replan([], [_cut_gpu(), declared])[0]
    assert layouts[("n1", 1)] == [("7g.141gb", 0, None, None)]


def test_a_fixed_layout_keeps_its_slices_and_takes_the_grown_service():
    fixed = MigCandidate("n1", 0, H200, True, "t", CUT, (), CUT, NOW)
    layouts, solve = _replan(_services(60), [fixed])
    assert layouts == {("n1", 0): [("2g.35gb", 0, None, None), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1),
                                   ("3g.71gb", 4, "a", 0)]}
    assert solve.repartitioned == 0


def test_moved_replicas_are_counted_and_stable_false_plans_from_scratch_but_still_measures():
    # a grows to 60 GiB and moves from 2g.35gb at 0 to the spare 3g.71gb at 4: one replica moved, b's two stay.
    layouts, solve = _replan(_services(60), [_cut_gpu()])
    assert solve.moved == 1 and solve.repartitioned == 0
    # Told not to be stable, the planner cuts the GPU as from scratch (not CUT, the first test shows), and
    # still reports the change against the current state: one GPU re-partitioned.
    solve = MigSolve()
    fresh = plan_mig(_services(), [_cut_gpu()], True, solve=solve, stable=False)
    assert fresh[("n1", 0)].counts() != dict(CUT) and solve.repartitioned == 1 and solve.stable is None
    # Told to be stable, it is (the current state is known from the candidate).
    solve = MigSolve()
    kept = plan_mig(_services(), [_cut_gpu()], True, solve=solve, stable=True)
    assert [(s.profile, s.start, s.workload, s.replica) for s in kept[("n1", 0)].slices] == list(NOW)
    assert solve.repartitioned == 0 and solve.stable["value"] == 0
