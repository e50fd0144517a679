# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a re-plan hands out slices, on small H200 fleets worked out by hand (placements and memory
from the MIG User Guide's H200 table: 1g.18gb starts 0..6, 16384 MiB; 2g.35gb at 0, 2, 4, 33024
MiB; 3g.71gb at 0 or 4 and 4g.71gb at 0, both 71168 MiB; 7g.141gb at 0). The rules checked are
the planner's documented ones: pinned replicas first, an unpinned replica leaves a slice to the
pinned replicas that need its profile, the GPUs hosting the most replicas are the ones kept,
declared GPUs are filled before auto ones, the fullest pattern goes on the first GPU, and
without carving a GPU nobody uses gets no slices. Kills mig_planner mutants that survived
`make mutation` (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

from mig_cases import CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import (
    MigCandidate, MigDemand, MigSolve, plan_mig)

A100 = "a100-80gb"
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
