# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stable re-planning's layouts written out whole, on one or two H200s worked out by hand: every
field of every slice (size and memory from the MIG User Guide's H200 table: 1g.18gb size 1,
16384 MiB; 2g.35gb size 2, 33024 MiB; 3g.71gb size 4, 71168 MiB; 7g.141gb size 8, 143104 MiB),
the current state a layout gives for the next re-plan, current slices listed in any order, and
fixed layouts that differ from the GPU's current one. Kills mig_planner mutants that survived
`make mutation` (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

import pytest

from mig_cases import CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigShortfall, MigSlice, MigSolve, plan_mig)

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
