# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stable re-planning (mig_planner.plan_mig from a current state) on one or two H200s, worked
out by hand: which layouts are kept, which replicas stay on their slices and which move, what
a pinned replica gets, and what the current state gives the next re-plan. A fast direct check
of _plan_stable, _realise_stable and _Stable (test_mig_stable.py checks the same against brute
force, but costs about a minute per mutant under `make mutation`).

Placements and memory from the NVIDIA MIG User Guide's H200 table (docs/gpu-facts.md): on the
8-slice grid 1g.18gb starts at 0..6 (size 1, 16384 MiB), 2g.35gb at 0, 2, 4 (size 2, 33024 MiB),
3g.71gb at 0 or 4 (size 4, 71168 MiB), 4g.71gb only at 0 (size 4), 7g.141gb at 0 (size 8). The
rules checked are the planner's documented ones: pinned replicas first, an unpinned replica
leaves a slice to the pinned replicas that need its profile, the GPUs hosting the most replicas
are the ones kept, declared GPUs are filled before auto ones, the fullest pattern goes on the
first GPU, and without carving a GPU nobody uses gets no slices.
"""

from __future__ import annotations

import pytest

from mig_cases import A100, CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigSolve, plan_mig)
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigShortfall, MigSlice, MigSolve, plan_mig)


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


# a belongs to team ta, b to tb; the GPU's spare slices to its owner, t.
SERVICES = [MigDemand("a", "ta", 0, 20 * GIB, (H200,)), MigDemand("b", "tb", 0, 10 * GIB, (H200,)),
            MigDemand("b", "tb", 1, 10 * GIB, (H200,))]


def test_a_kept_layout_gives_every_slice_with_its_size_memory_team_and_replica():
    for current_slices in (NOW, tuple(reversed(NOW))):        # listed in any order: kept in start order
        layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, current_slices)], True)
        layout = layouts[("n1", 0)]
        assert (layout.node, layout.index, layout.model) == ("n1", 0, H200)
        assert layout.slices == [
            MigSlice("2g.35gb", 0, 2, 33024, "ta", "a", 0), MigSlice("1g.18gb", 2, 1, 16384, "tb", "b", 0),
            MigSlice("1g.18gb", 3, 1, 16384, "tb", "b", 1), MigSlice("3g.71gb", 4, 4, 71168, "t", None, None)]
        # What the next re-plan reads as this GPU's current state.
        assert layout.as_current() == {"current": CUT, "current_slices": NOW}


def test_fixed_layouts_other_than_the_current_one_count_as_re_partitioned():
    # Both GPUs are fixed to CUT by the inventory but run 7g.141gb now: both change whatever the
    # plan (2 re-partitioned), and the slices are placed as the MIG User Guide allows, smallest
    # starts first (2g.35gb at 0, 1g.18gb at 2 and 3, 3g.71gb at 4).
    full = (("7g.141gb", 1),)
    candidates = [MigCandidate("n1", i, H200, True, "t", CUT, (), full, (("7g.141gb", 0, None, None),))
                  for i in (0, 1)]
    solve = MigSolve()
    layouts = plan_mig(SERVICES, candidates, True, solve=solve)
    assert solve.repartitioned == 2 and solve.stable["value"] == 2
    for key in (("n1", 0), ("n1", 1)):
        assert sorted((s.profile, s.start) for s in layouts[key].slices) == \
            [("1g.18gb", 2), ("1g.18gb", 3), ("2g.35gb", 0), ("3g.71gb", 4)]
    assert sorted((s.workload, s.replica) for layout in layouts.values() for s in layout.slices if s.workload) == \
        [("a", 0), ("b", 0), ("b", 1)]


def _slices(layouts):
    return {key: sorted((s.profile, s.start, s.workload) for s in layout.slices) for key, layout in layouts.items()}


def test_without_a_current_state_the_plan_is_from_scratch_and_measures_nothing():
    solve = MigSolve()
    plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t")], True, solve=solve)
    assert (solve.repartitioned, solve.moved, solve.stable) == (None, None, None)


def test_a_gpu_with_current_counts_but_no_slices_listed_makes_the_state_known():
    # The current counts alone are enough to re-plan stably: CUT stays (nothing re-partitioned).
    solve = MigSolve()
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT)], True, solve=solve)
    assert solve.stable is not None and solve.repartitioned == 0
    assert sorted((s.profile, s.start) for s in layouts[("n1", 0)].slices) == \
        [("1g.18gb", 2), ("1g.18gb", 3), ("2g.35gb", 0), ("3g.71gb", 4)]


def test_stable_true_with_nothing_known_is_stable_all_the_same_and_needs_no_solve_record():
    # Told to be stable with no current state: every GPU counts as not in MIG mode now; the
    # declared GPU is cut (1 re-partitioned). Without a MigSolve passed in, nothing fails.
    solve = MigSolve()
    plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t")], True, solve=solve, stable=True)
    assert solve.stable is not None and solve.repartitioned == 1
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW)], True)
    assert _slices(layouts) == {("n1", 0): sorted((p, s, w) for p, s, w, _r in NOW)}


def test_by_default_the_leftover_is_carved_and_an_unused_declared_gpu_stays_mig():
    # One 10 GiB replica on a declared H200: a 1g.18gb, and the rest carved (by default) into more
    # slices (without carving the GPU would hold that one slice). A declared GPU with no service
    # is cut all the same (7g.141gb, the one profile spanning the grid).
    layouts = plan_mig(SERVICES[1:2], [MigCandidate("n1", 0, H200, True, "t"), MigCandidate("n1", 1, H200, True, "t")])
    used = layouts[("n1", 0)].slices
    assert ("1g.18gb", "b") in {(s.profile, s.workload) for s in used} and len(used) > 1
    assert _slices(layouts)[("n1", 1)] == [("7g.141gb", 0, None)]


def test_a_fixed_layout_keeps_every_slice_even_unused():
    # Planned from scratch, the GPU fixed to CUT hosts only b's two replicas: its 2g.35gb and
    # 3g.71gb stay, spare.
    layouts = plan_mig(SERVICES[1:], [MigCandidate("n1", 0, H200, True, "t", CUT)], True)
    assert sorted(s.profile for s in layouts[("n1", 0)].slices) == ["1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"]
    assert sorted(s.workload for s in layouts[("n1", 0)].slices if s.workload) == ["b", "b"]


def test_a_kept_layout_keeps_its_slices_where_they_are_not_where_a_fresh_cut_would_put_them():
    # b's 1g.18gb at 0 and 1, a's 2g.35gb at 2 (2g.35gb may start at 0, 2 or 4), the 3g.71gb at 4:
    # valid, and not the order a fresh cut places them in (largest first). Listed shuffled.
    now = (("1g.18gb", 0, "b", 0), ("1g.18gb", 1, "b", 1), ("2g.35gb", 2, "a", 0), ("3g.71gb", 4, None, None))
    shuffled = (now[2], now[3], now[1], now[0])
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, shuffled)], True)
    assert [(s.profile, s.start, s.workload, s.replica) for s in layouts[("n1", 0)].slices] == list(now)


NOT_FRESH = (("1g.18gb", 0, "b", 0), ("1g.18gb", 1, "b", 1), ("2g.35gb", 2, "a", 0), ("3g.71gb", 4, None, None))


def test_a_fixed_layout_equal_to_the_current_one_keeps_its_slices_where_they_are():
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", CUT, (), CUT, NOT_FRESH)], True)
    assert [(s.profile, s.start, s.workload, s.replica) for s in layouts[("n1", 0)].slices] == list(NOT_FRESH)


def test_current_slices_that_do_not_match_the_current_counts_are_placed_afresh():
    # The exporter listed three of the four slices: the counts say CUT, so the GPU keeps CUT, placed
    # as a fresh cut places it (every slice of CUT, none missing).
    layouts = plan_mig(SERVICES, [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOT_FRESH[:3])], True)
    assert sorted(s.profile for s in layouts[("n1", 0)].slices) == ["1g.18gb", "1g.18gb", "2g.35gb", "3g.71gb"]


def test_a_pinned_replica_gets_the_one_slice_of_its_profile_and_the_unpinned_one_the_other():
    # The GPU is cut 4g.71gb at 0 + 3g.71gb at 4 (both 71168 MiB), nothing on it yet. p is pinned
    # to 3g.71gb; u needs 60 GiB, any 71168 MiB slice: u must leave the 3g.71gb to p.
    current = (("3g.71gb", 1), ("4g.71gb", 1))
    now = (("4g.71gb", 0, None, None), ("3g.71gb", 4, None, None))
    demands = [MigDemand("u", "t", 0, 60 * GIB, (H200,)), MigDemand("p", "t", 0, 60 * GIB, (H200,), "3g.71gb")]
    solve = MigSolve()
    layouts = plan_mig(demands, [MigCandidate("n1", 0, H200, True, "t", None, (), current, now)], True, solve=solve)
    assert [(s.profile, s.start, s.workload) for s in layouts[("n1", 0)].slices] == \
        [("4g.71gb", 0, "u"), ("3g.71gb", 4, "p")]
    assert solve.repartitioned == 0


def test_of_two_gpus_cut_alike_the_one_hosting_more_replicas_is_kept():
    # GPUs 0 and 1 are both cut CUT. GPU 0 hosts a and b's two replicas, GPU 1 only e (10 GiB on a
    # 1g.18gb at 2). big is pinned to 7g.141gb: one GPU must be re-cut for it. Keeping GPU 0 keeps
    # three replicas in place; e moves to GPU 0's spare 3g.71gb. One GPU re-partitioned, three kept.
    gpu1 = (("2g.35gb", 0, None, None), ("1g.18gb", 2, "e", 0), ("1g.18gb", 3, None, None), ("3g.71gb", 4, None, None))
    candidates = [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW),
                  MigCandidate("n1", 1, H200, True, "t", None, (), CUT, gpu1)]
    demands = SERVICES + [MigDemand("e", "t", 0, 10 * GIB, (H200,)), MigDemand("big", "t", 0, GIB, (H200,), "7g.141gb")]
    solve = MigSolve()
    layouts = plan_mig(demands, candidates, True, solve=solve)
    assert _slices(layouts) == {("n1", 0): sorted([("2g.35gb", 0, "a"), ("1g.18gb", 2, "b"), ("1g.18gb", 3, "b"),
                                                   ("3g.71gb", 4, "e")]),
                                ("n1", 1): [("7g.141gb", 0, "big")]}
    assert (solve.repartitioned, solve.moved) == (1, 1)
    assert solve.stays["value"] == 3


def test_replicas_of_a_service_that_is_gone_leave_the_others_in_place():
    # a is no longer planned: its 2g.35gb becomes spare; b's two replicas stay (2 kept in place).
    solve = MigSolve()
    layouts = plan_mig(SERVICES[1:], [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW)], True, solve=solve)
    assert _slices(layouts)[("n1", 0)] == sorted([("2g.35gb", 0, None), ("1g.18gb", 2, "b"), ("1g.18gb", 3, "b"),
                                                  ("3g.71gb", 4, None)])
    assert solve.stays["value"] == 2


def test_an_unpinned_replica_leaves_its_slice_to_a_pinned_one_that_needs_the_profile():
    # u (60 GiB, any 71168 MiB slice) is on the GPU's only 3g.71gb, at 4; the 4g.71gb at 0 is spare.
    # p, new, is pinned to 3g.71gb: re-cutting would re-partition the GPU, so u moves to the 4g.71gb
    # and p takes the 3g.71gb. One replica moved.
    current = (("3g.71gb", 1), ("4g.71gb", 1))
    now = (("4g.71gb", 0, None, None), ("3g.71gb", 4, "u", 0))
    demands = [MigDemand("u", "t", 0, 60 * GIB, (H200,)), MigDemand("p", "t", 0, 60 * GIB, (H200,), "3g.71gb")]
    solve = MigSolve()
    layouts = plan_mig(demands, [MigCandidate("n1", 0, H200, True, "t", None, (), current, now)], True, solve=solve)
    assert [(s.profile, s.start, s.workload) for s in layouts[("n1", 0)].slices] == \
        [("4g.71gb", 0, "u"), ("3g.71gb", 4, "p")]
    assert (solve.repartitioned, solve.moved) == (0, 1)


def test_a_replica_only_an_uncut_profile_could_hold_on_fixed_gpus_is_hopeless():
    # The only A100 is fixed at 7 x 1g.10gb (9728 MiB each); a replica needs 30 GiB. Its own cut
    # could hold it (3g.40gb) but a fixed layout is never cut: no slice anywhere holds it.
    with pytest.raises(MigShortfall) as raised:
        plan_mig([MigDemand("x", "t", 0, 30 * GIB, ("a100-80gb",))],
                 [MigCandidate("n1", 0, "a100-80gb", True, "t", (("1g.10gb", 7),))], True)
    assert str(raised.value).startswith("no GPU that may be cut with MIG has a slice that holds these replicas:")


SPARE = (None, None)


def _replicas(name, n, gib, profile=None, models=(H200,)):
    return [MigDemand(name, "t", i, gib * GIB, models, profile) for i in range(n)]


def _gpu(index, slices, declared=True, node="n1", forbidden=(), layout=None):
    """An H200 cut as ``slices`` ((profile, start, workload, replica), ...) now."""
    counts = {}
    for name, _start, _w, _r in slices:
        counts[name] = counts.get(name, 0) + 1
    current = tuple(sorted(counts.items())) if slices else None
    return MigCandidate(node, index, H200, declared, "t", layout, tuple(forbidden), current, tuple(slices))


def _cut_with(hosted):
    """CUT's slices now, with the replicas ``hosted`` ({start: (workload, replica)})."""
    return tuple((name, start) + hosted.get(start, SPARE) for name, start, _w, _r in NOW)


def _hosted(layout):
    return [(s.profile, s.start, s.workload, s.replica) for s in layout.slices if s.workload]


def _plan(demands, candidates, carve=True):
    solve = MigSolve()
    layouts = plan_mig(demands, candidates, carve, solve=solve)
    return layouts, solve


# --- which replicas stay ---------------------------------------------------------------------

def test_a_replica_blocked_by_the_pinned_ones_does_not_stop_the_next_one_from_staying():
    # p (2 replicas) is pinned to 3g.71gb; GPU 0's two 3g.71gb are the only ones (GPU 2 forbids
    # it), so u/0, on one of them, must leave. u/1 sits on GPU 1's 4g.71gb and stays. GPU 2 is
    # declared, not MIG now: cut for u/0 with the 71168 MiB profile it allows, 4g.71gb.
    gpu0 = _gpu(0, (("3g.71gb", 0, "u", 0), ("3g.71gb", 4) + SPARE))
    gpu1 = _gpu(1, (("4g.71gb", 0, "u", 1), ("2g.35gb", 4) + SPARE, ("1g.18gb", 6) + SPARE))
    gpu2 = _gpu(2, (), forbidden=("3g.71gb",))
    layouts, solve = _plan(_replicas("p", 2, 60, "3g.71gb") + _replicas("u", 2, 60), [gpu0, gpu1, gpu2])
    assert _hosted(layouts[("n1", 0)]) == [("3g.71gb", 0, "p", 0), ("3g.71gb", 4, "p", 1)]
    assert _hosted(layouts[("n1", 1)]) == [("4g.71gb", 0, "u", 1)]
    assert _hosted(layouts[("n1", 2)]) == [("4g.71gb", 0, "u", 0)]
    assert solve.moved == 1


def test_a_pinned_replica_that_stays_uses_up_its_own_reservation():
    # p/0 stays on GPU 0's 3g.71gb at 0; p/1 is new. Three 3g.71gb in all (GPU 1 is CUT, spare):
    # with p/0 in place one more is needed for p/1, so u/0 keeps the one it is on.
    gpu0 = _gpu(0, (("3g.71gb", 0, "p", 0), ("3g.71gb", 4, "u", 0)))
    gpu1 = _gpu(1, tuple((name, start) + SPARE for name, start, _w, _r in NOW))
    layouts, solve = _plan(_replicas("p", 2, 60, "3g.71gb") + _replicas("u", 1, 60), [gpu0, gpu1])
    assert _hosted(layouts[("n1", 0)]) == [("3g.71gb", 0, "p", 0), ("3g.71gb", 4, "u", 0)]
    assert _hosted(layouts[("n1", 1)]) == [("3g.71gb", 4, "p", 1)]
    assert (solve.repartitioned, solve.moved) == (0, 0)


def test_an_unpinned_replica_leaves_when_every_slice_of_the_profile_is_needed_by_pinned_ones():
    # As above with p of 3 replicas: all three 3g.71gb are p's, so u/0 moves to GPU 2's spare
    # 4g.71gb (GPU 2 is cut 4g.71gb + 2g.35gb + 1g.18gb now).
    gpu0 = _gpu(0, (("3g.71gb", 0, "p", 0), ("3g.71gb", 4, "u", 0)))
    gpu1 = _gpu(1, tuple((name, start) + SPARE for name, start, _w, _r in NOW))
    gpu2 = _gpu(2, (("4g.71gb", 0) + SPARE, ("2g.35gb", 4) + SPARE, ("1g.18gb", 6) + SPARE))
    layouts, solve = _plan(_replicas("p", 3, 60, "3g.71gb") + _replicas("u", 1, 60), [gpu0, gpu1, gpu2])
    assert _hosted(layouts[("n1", 0)]) == [("3g.71gb", 0, "p", 0), ("3g.71gb", 4, "p", 1)]
    assert _hosted(layouts[("n1", 1)]) == [("3g.71gb", 4, "p", 2)]
    assert _hosted(layouts[("n1", 2)]) == [("4g.71gb", 0, "u", 0)]
    assert (solve.repartitioned, solve.moved) == (0, 1)


def test_replicas_on_a_fixed_layout_equal_to_the_current_one_stay_on_their_slices():
    # Fixed to CUT by the inventory and cut so now: a on the 2g.35gb, b/0 on the 1g.18gb at 3 (the
    # one at 2 spare). Both stay where they are.
    now = (("2g.35gb", 0, "a", 0), ("1g.18gb", 2) + SPARE, ("1g.18gb", 3, "b", 0), ("3g.71gb", 4) + SPARE)
    fixed = _gpu(0, now, layout=CUT)
    layouts, solve = _plan(_replicas("a", 1, 20) + _replicas("b", 1, 10), [fixed])
    assert _hosted(layouts[("n1", 0)]) == [("2g.35gb", 0, "a", 0), ("1g.18gb", 3, "b", 0)]
    assert solve.moved == 0


def test_replicas_listed_on_slices_the_counts_do_not_have_are_placed_as_on_a_fresh_cut():
    # The counts say CUT but the slices listed (1g.18gb at 0 and 1, 2g.35gb at 2) are not all
    # there: the GPU keeps CUT placed afresh (2g.35gb at 0, 1g.18gb at 2 and 3, 3g.71gb at 4), and
    # no replica is where it was listed: a takes the 2g.35gb, b/0 and b/1 the 1g.18gb in order.
    listed = (("1g.18gb", 0, "b", 0), ("1g.18gb", 1, "b", 1), ("2g.35gb", 2, "a", 0))
    gpu = MigCandidate("n1", 0, H200, True, "t", None, (), CUT, listed)
    layouts, _solve = _plan(_replicas("a", 1, 20) + _replicas("b", 2, 10), [gpu])
    assert [(s.profile, s.start, s.workload, s.replica) for s in layouts[("n1", 0)].slices] == [
        ("2g.35gb", 0, "a", 0), ("1g.18gb", 2, "b", 0), ("1g.18gb", 3, "b", 1), ("3g.71gb", 4, None, None)]


def test_a_replica_on_a_fixed_layout_stays_though_another_pool_has_the_same_slice_spare():
    # Two GPUs fixed to CUT and cut so now, in two pools (GPU 0 forbids 7g.141gb): b/0 is on
    # GPU 0's 1g.18gb at 3, GPU 1's are spare. Either would do for every other objective;
    # keeping b/0 in place decides.
    now = (("2g.35gb", 0) + SPARE, ("1g.18gb", 2) + SPARE, ("1g.18gb", 3, "b", 0), ("3g.71gb", 4) + SPARE)
    spare = tuple((name, start) + SPARE for name, start, _w, _r in now)
    fixed = [_gpu(0, now, layout=CUT, forbidden=("7g.141gb",)), _gpu(1, spare, layout=CUT)]
    layouts, solve = _plan(_replicas("b", 1, 10), fixed)
    assert (_hosted(layouts[("n1", 0)]), _hosted(layouts[("n1", 1)])) == ([("1g.18gb", 3, "b", 0)], [])
    assert (solve.repartitioned, solve.moved) == (0, 0)


def test_the_gpu_kept_is_the_one_whose_replicas_stay_not_one_of_another_layout_that_would_do_as_well():
    # GPU 0 is cut 3 x 1g.18gb + 3g.71gb with b/0 and b/1 on it; GPU 1 is cut 7 x 1g.18gb with b/2.
    # big needs a whole GPU, so one is re-cut; either way b's three replicas end on three
    # 1g.18gb, so only the replicas kept in place tell the two apart: keep the GPU holding two.
    # The same with the two GPUs the other way round.
    more = (("1g.18gb", 0, "b", 0), ("1g.18gb", 1, "b", 1), ("1g.18gb", 2) + SPARE, ("3g.71gb", 4) + SPARE)
    fewer = (("1g.18gb", 0, "b", 2),) + tuple(("1g.18gb", i) + SPARE for i in range(1, 7))
    demands = _replicas("b", 3, 10) + _replicas("big", 1, 130, "7g.141gb")
    for kept, recut in ((0, 1), (1, 0)):
        layouts, solve = _plan(demands, sorted([_gpu(kept, more), _gpu(recut, fewer)], key=lambda c: c.index))
        assert _hosted(layouts[("n1", kept)]) == [("1g.18gb", 0, "b", 0), ("1g.18gb", 1, "b", 1), ("1g.18gb", 2, "b", 2)]
        assert _hosted(layouts[("n1", recut)]) == [("7g.141gb", 0, "big", 0)]
        assert (solve.repartitioned, solve.moved) == (1, 1)


def test_two_pinned_classes_of_one_profile_both_reserve_their_slices():
    # An A100-80GB (MIG User Guide: 1g.20gb at 0, 2, 4, 6 and 2g.20gb at 0, 2, 4, both 19968 MiB)
    # cut 1g.20gb at 0 (u on it) and 2, 2g.20gb at 4. p and q are pinned to 1g.20gb; q may also
    # run on an H100-80GB (which has 1g.20gb too), so the two are classes of their own. The
    # H100 stays whole (an auto GPU not in MIG mode). p and q need both 1g.20gb: u moves to the
    # 2g.20gb.
    now = (("1g.20gb", 0, "u", 0), ("1g.20gb", 2) + SPARE, ("2g.20gb", 4) + SPARE)
    a100 = MigCandidate("n1", 0, A100, True, "t", None, (), (("1g.20gb", 2), ("2g.20gb", 1)), now)
    h100 = MigCandidate("n2", 0, "h100-80gb", False, "t")
    demands = [MigDemand("p", "t", 0, 10 * GIB, (A100,), "1g.20gb"), MigDemand("q", "t", 0, 10 * GIB, (A100, "h100-80gb"), "1g.20gb"),
               MigDemand("u", "t", 0, 15 * GIB, (A100,))]
    layouts, solve = _plan(demands, [a100, h100])
    assert set(layouts) == {("n1", 0)}
    assert _hosted(layouts[("n1", 0)]) == [("1g.20gb", 0, "p", 0), ("1g.20gb", 2, "q", 0), ("2g.20gb", 4, "u", 0)]
    assert (solve.repartitioned, solve.moved) == (0, 1)


def test_a_group_counts_as_staying_only_the_replicas_of_the_gpus_it_keeps():
    # GPUs 0-2 are CUT: GPU 0 hosts a, b/0, b/1 and d (four replicas), GPUs 1 and 2 one c replica
    # each, on the 3g.71gb. GPU 3 is cut 4g.71gb + 2g.35gb + 1g.18gb, spare. big needs a whole GPU.
    # Re-cutting GPU 3 keeps all six replicas in place; re-cutting GPU 2 would keep five (c/1 to
    # GPU 3's 4g.71gb) for the same GPUs used (four) and the same memory.
    gpus = [_gpu(0, _cut_with({0: ("a", 0), 2: ("b", 0), 3: ("b", 1), 4: ("d", 0)})),
            _gpu(1, _cut_with({4: ("c", 0)})), _gpu(2, _cut_with({4: ("c", 1)})),
            _gpu(3, (("4g.71gb", 0) + SPARE, ("2g.35gb", 4) + SPARE, ("1g.18gb", 6) + SPARE))]
    demands = (_replicas("a", 1, 20) + _replicas("b", 2, 10) + _replicas("c", 2, 60) + _replicas("d", 1, 60)
               + _replicas("big", 1, 130, "7g.141gb"))
    layouts, solve = _plan(demands, gpus)
    assert _hosted(layouts[("n1", 2)]) == [("3g.71gb", 4, "c", 1)]
    assert _hosted(layouts[("n1", 3)]) == [("7g.141gb", 0, "big", 0)]
    assert (solve.repartitioned, solve.moved) == (1, 0)


def test_replicas_that_outgrew_their_slices_do_not_count_as_staying_when_the_gpu_kept_is_chosen():
    # GPUs 0 and 1 are cut 7 x 1g.18gb (16384 MiB). g/0-2 sit on GPU 0 but now need 30 GiB, more
    # than a 1g.18gb gives: they move whatever happens. u/0-2 (10 GiB) sit on GPU 1. One GPU cannot
    # hold them all (a g takes two of the eight memory slices, a u one: nine), so one GPU is kept
    # and one re-cut. Both host three replicas, but only GPU 1's can stay: GPU 1 is kept, GPU 0
    # re-cut for the g.
    ones = [("1g.18gb", start) for start in range(7)]
    gpu0 = _gpu(0, tuple(s + (("g", s[1]) if s[1] < 3 else SPARE) for s in ones))
    gpu1 = _gpu(1, tuple(s + (("u", s[1]) if s[1] < 3 else SPARE) for s in ones))
    layouts, solve = _plan(_replicas("g", 3, 30) + _replicas("u", 3, 10), [gpu0, gpu1])
    assert _hosted(layouts[("n1", 1)]) == [("1g.18gb", n, "u", n) for n in range(3)]
    assert sorted((w, r) for _p, _s, w, r in _hosted(layouts[("n1", 0)])) == [("g", 0), ("g", 1), ("g", 2)]
    assert (solve.repartitioned, solve.moved) == (1, 3)


# --- which GPUs are kept and filled first ----------------------------------------------------

def test_of_two_gpus_cut_alike_the_second_one_hosting_more_is_the_one_kept():
    # Both GPUs are CUT. GPU 1 hosts a and b (three replicas), GPU 0 only e (on the 1g.18gb at 2).
    # big is pinned to 7g.141gb, so one GPU is re-cut: GPU 0, though it comes first. e moves to
    # GPU 1's spare 3g.71gb, the one slice left there.
    gpu0 = _gpu(0, (("2g.35gb", 0) + SPARE, ("1g.18gb", 2, "e", 0), ("1g.18gb", 3) + SPARE, ("3g.71gb", 4) + SPARE))
    gpu1 = _gpu(1, NOW)
    demands = _replicas("a", 1, 20) + _replicas("b", 2, 10) + _replicas("e", 1, 10) + _replicas("big", 1, 130, "7g.141gb")
    layouts, solve = _plan(demands, [gpu0, gpu1])
    assert _hosted(layouts[("n1", 0)]) == [("7g.141gb", 0, "big", 0)]
    assert _hosted(layouts[("n1", 1)]) == [(p, s, w, r) for p, s, w, r in NOW if w] + [("3g.71gb", 4, "e", 0)]
    assert (solve.repartitioned, solve.moved) == (1, 1)


def test_a_new_replica_goes_to_a_declared_gpu_before_an_auto_one():
    # n2/0 is declared, n1/0 auto (both CUT now); neither can be emptied into the other (a and e
    # each need the one 2g.35gb of a GPU). x is new and needs a 1g.18gb: both have a spare one at 2;
    # declared GPUs are filled first, so x goes to n2/0 though n1 sorts first.
    declared = _gpu(0, (("2g.35gb", 0, "a", 0), ("1g.18gb", 2) + SPARE, ("1g.18gb", 3) + SPARE, ("3g.71gb", 4) + SPARE),
                    node="n2")
    auto = _gpu(0, (("2g.35gb", 0, "e", 0), ("1g.18gb", 2) + SPARE, ("1g.18gb", 3) + SPARE, ("3g.71gb", 4, "d", 0)),
                declared=False)
    demands = _replicas("a", 1, 20) + _replicas("e", 1, 20) + _replicas("d", 1, 60) + _replicas("x", 1, 10)
    layouts, solve = _plan(demands, [declared, auto])
    assert _hosted(layouts[("n2", 0)]) == [("2g.35gb", 0, "a", 0), ("1g.18gb", 2, "x", 0)]
    assert _hosted(layouts[("n1", 0)]) == [("2g.35gb", 0, "e", 0), ("3g.71gb", 4, "d", 0)]
    assert (solve.repartitioned, solve.moved) == (0, 0)


# --- pinned replicas first -------------------------------------------------------------------

def test_a_kept_gpu_gives_its_one_3g71gb_to_the_pinned_replica_whatever_the_order_of_the_classes():
    # Cut 4g.71gb at 0 + 3g.71gb at 4, nothing on it. u needs 10 GiB (its class, which could also
    # use a 1g.18gb, sorts before p's); p is pinned to 3g.71gb. Only these two slices are there,
    # so u gets the 4g.71gb.
    gpu = _gpu(0, (("4g.71gb", 0) + SPARE, ("3g.71gb", 4) + SPARE))
    layouts, solve = _plan(_replicas("u", 1, 10) + _replicas("p", 1, 60, "3g.71gb"), [gpu])
    assert _hosted(layouts[("n1", 0)]) == [("4g.71gb", 0, "u", 0), ("3g.71gb", 4, "p", 0)]
    assert solve.repartitioned == 0


def test_from_scratch_a_fixed_layout_gives_its_one_3g71gb_to_the_pinned_replica():
    # The same on a fixed layout, planned from scratch. u may also run on the A100 (so its class
    # sorts first), which stays whole: converting an auto GPU is the first thing avoided.
    fixed = MigCandidate("n1", 0, H200, True, "t", (("3g.71gb", 1), ("4g.71gb", 1)))
    a100 = MigCandidate("n2", 0, A100, False, "t")
    layouts = plan_mig(_replicas("u", 1, 10, models=(A100, H200)) + _replicas("p", 1, 60, "3g.71gb"), [fixed, a100])
    assert set(layouts) == {("n1", 0)}
    assert sorted((s.profile, s.workload) for s in layouts[("n1", 0)].slices) == [("3g.71gb", "p"), ("4g.71gb", "u")]


# --- patterns on GPUs ------------------------------------------------------------------------

SIZE = {"1g.18gb": 1, "2g.35gb": 2, "3g.71gb": 4, "4g.71gb": 4, "7g.141gb": 8}     # grid units


def test_the_fuller_pattern_goes_on_the_first_gpu():
    # Two GPUs, each cut with one of the solver's patterns, without carving: the one that comes
    # first holds the fuller one (more of the 8 grid units). big needs a whole GPU and s (seven
    # replicas) fit 7 x 1g.18gb, 7 units; p and q are pinned so as to need 3g.71gb + 3g.71gb and
    # 4g.71gb + 2g.35gb + 1g.18gb in some split over two GPUs.
    pinned = [MigDemand("p", "t", i, 10 * GIB, (H200,), name)
              for i, name in enumerate(("3g.71gb", "3g.71gb", "4g.71gb", "2g.35gb", "1g.18gb"))]
    gpus = [MigCandidate("n1", i, H200, True, "t") for i in (0, 1)]
    for demands in (_replicas("s", 7, 10) + _replicas("big", 1, 130), pinned):
        for stable in (False, True):          # from scratch, and re-planned with both GPUs not MIG now
            layouts = plan_mig(demands, gpus, False, stable=stable)
            first, second = (sum(SIZE[s.profile] for s in layouts[("n1", i)].slices) for i in (0, 1))
            assert first >= second and (first, second) in {(8, 7), (8, 8)}
            assert sorted(w for layout in layouts.values() for _p, _s, w, _r in _hosted(layout)) == \
                sorted(d.workload for d in demands)


def test_without_carving_a_declared_gpu_nobody_uses_gets_no_slices_when_re_planned_too():
    gpus = [_gpu(0, NOW), MigCandidate("n1", 1, H200, True, "t")]
    demands = _replicas("a", 1, 20) + _replicas("b", 2, 10)
    for stable in (False, True):
        layouts = plan_mig(demands, gpus, False, stable=stable)
        assert layouts[("n1", 1)].slices == []
