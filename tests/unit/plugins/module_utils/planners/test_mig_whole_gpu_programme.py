# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The MIG programme's two roundings (_Programme.whole_gpus and .route_counts) on fractional
solutions. HiGHS returns integral ones for every fleet of the tests, so these paths (whole
GPUs per pool when the GPUs per pattern come out as a mix; integer routes when the replicas'
routes do) are fed a fractional point written by hand, that meets the programme's rows, and
the answer is checked against what the rows mean, not against the code: whole GPUs of the
pool's patterns that hold the slices wanted, no more GPUs than the solution cut; routes that
give each class all its replicas and each kind of slice exactly its count, only on slices
with enough memory (MiB from the MIG User Guide's H200 table: 1g.18gb 16384, 1g.35gb and
2g.35gb 33024, 3g.71gb and 4g.71gb 71168, 7g.141gb 143104)."""

from __future__ import annotations

import pytest

from mig_cases import A100, CUT, GIB, H200, NOW
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.mig_planner import MigCandidate, MigDemand

MEMORY = {"1g.18gb": 16384, "1g.35gb": 33024, "2g.35gb": 33024, "3g.71gb": 71168, "4g.71gb": 71168,
          "7g.141gb": 143104}


@pytest.fixture()
def programme_of(monkeypatch):
    """The programme of a plan and the solution HiGHS gave it."""
    def capture(demands, candidates):
        seen = {}
        original = mig_planner._Programme.whole_gpus

        def spy(self, values):
            seen.setdefault("programme", (self, values.copy()))
            return original(self, values)
        monkeypatch.setattr(mig_planner._Programme, "whole_gpus", spy)
        mig_planner.plan_mig(demands, candidates, True)
        monkeypatch.setattr(mig_planner._Programme, "whole_gpus", original)
        return seen["programme"]
    return capture


def _replicas(name, n, gib, models=(H200,)):
    return [MigDemand(name, "t", i, gib * GIB, models) for i in range(n)]


def _column(programme, pool, pattern: dict) -> int:
    return next(j for j, (k, p, _s) in enumerate(programme.patterns) if k == pool and p == pattern)


def _kind(programme, pool, mib) -> int:
    return programme.S + programme.kinds.index((pool, ("mem", mib)))


def _fractional(programme, values, pool, slices_1g18, gpus=1):
    """``gpus`` GPUs of ``pool`` cut as a mix: half a GPU 7g.141gb, the rest 7 x 1g.18gb (3.5
    1g.18gb slices on one GPU, 10.5 on two), ``slices_1g18`` of them given; nothing else cut."""
    values = values.copy()
    values[:programme.A] = 0.0
    values[_column(programme, pool, {"1g.18gb": 7})] = gpus - 0.5
    values[_column(programme, pool, {"7g.141gb": 1})] = 0.5
    values[programme.S:programme.Z] = 0.0
    values[_kind(programme, pool, 16384)] = slices_1g18
    values[programme.G + pool] = gpus
    return values


def _holds(pattern: dict, slices_1g18: int) -> bool:
    return sum(n for name, n in pattern.items() if MEMORY[name] == 16384) >= slices_1g18


def test_a_fractional_mix_of_patterns_becomes_one_whole_gpu_that_holds_the_slices(programme_of):
    programme, values = programme_of(_replicas("a", 2, 10), [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)])
    chosen = programme.whole_gpus(_fractional(programme, values, 0, 2))
    assert len(chosen) == 1
    pool, pattern, gpus = chosen[0]
    assert (pool, gpus) == (0, 1) and _holds(pattern, 2)
    assert tuple(sorted(pattern.items())) in {p for p, _s in programme.pool_columns[0]}


def test_a_pool_with_nothing_wanted_is_passed_over_for_the_next(programme_of):
    # Pools sort by model: the A100's (pool 0) gives nothing; the H200's (pool 1) two 1g.18gb.
    candidates = [MigCandidate("n0", 0, A100, False, "t")] + [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)]
    programme, values = programme_of(_replicas("a", 2, 10), candidates)
    assert [pool.model for pool in programme.pools] == [A100, H200]
    values = _fractional(programme, values, 1, 2)
    values[programme.G] = 0
    chosen = programme.whole_gpus(values)
    assert [(pool, gpus) for pool, _p, gpus in chosen] == [(1, 1)] and _holds(chosen[0][1], 2)


def test_slices_of_fixed_layouts_are_not_wanted_again(programme_of):
    # A GPU fixed at 7 x 1g.18gb gives 7 of the 9 1g.18gb slices: one cut GPU must hold the other 2.
    candidates = [MigCandidate("n0", 0, H200, True, "t", (("1g.18gb", 7),))] + \
        [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)]
    programme, values = programme_of(_replicas("a", 9, 10), candidates)
    chosen = programme.whole_gpus(_fractional(programme, values, 0, 9))
    assert len(chosen) == 1 and chosen[0][2] == 1 and _holds(chosen[0][1], 2)


def test_slices_no_gpu_count_can_hold_are_no_whole_gpus(programme_of):
    # 8 1g.18gb slices asked of one GPU (at most 7 fit, whatever the mix): no whole GPUs (_solve
    # then solves again with whole GPUs per pattern).
    programme, values = programme_of(_replicas("a", 2, 10), [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)])
    assert programme.whole_gpus(_fractional(programme, values, 0, 8)) is None
    # The same eight on two GPUs: two whole GPUs, together holding them.
    chosen = programme.whole_gpus(_fractional(programme, values, 0, 8, gpus=2))
    assert sum(gpus for _k, _p, gpus in chosen) == 2
    assert sum(gpus * sum(n for name, n in p.items() if MEMORY[name] == 16384) for _k, p, gpus in chosen) >= 8


def test_fractional_routes_become_integer_ones_with_the_same_slice_counts(programme_of):
    # a needs 10 GiB, b 20 GiB (not a 1g.18gb): one 2g.35gb-sized slice and one 3g.71gb-sized slice,
    # each replica half on each. Integer routes: one replica on each kind.
    demands = _replicas("a", 1, 10) + _replicas("b", 1, 20)
    programme, values = programme_of(demands, [MigCandidate("n1", 0, H200, False, "t")])
    need = {c: members[0].need_mib for c, (_key, members) in enumerate(programme.classes)}
    values = values.copy()
    values[programme.S:programme.Z] = 0.0
    values[_kind(programme, 0, 33024)] = values[_kind(programme, 0, 71168)] = 1
    values[programme.Z:] = 0.0
    for j, (_c, _k, kind) in enumerate(programme.z):
        if kind[1] in (33024, 71168):
            values[programme.Z + j] = 0.5
    routes = programme.route_counts(values)
    assert all(isinstance(n, int) and n > 0 for _c, _k, _kind, n in routes)
    assert sorted(n for _c, _k, _kind, n in routes) == [1, 1]
    assert sorted(c for c, _k, _kind, _n in routes) == [0, 1]                      # each class once
    assert sorted(kind[1] for _c, _k, kind, _n in routes) == [33024, 71168]       # each slice once
    assert all(kind[1] >= need[c] for c, _k, kind, _n in routes)                 # enough memory
    # Replicas of the same class along their routes, in order.
    queues = programme.routes(values)
    assert sorted(next(queue).workload for queue, _k, _kind, _n in queues) == ["a", "b"]


def test_one_slice_wanted_is_one_whole_gpu_that_has_it(programme_of):
    programme, values = programme_of(_replicas("a", 2, 10), [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)])
    chosen = programme.whole_gpus(_fractional(programme, values, 0, 1))
    assert len(chosen) == 1 and chosen[0][2] == 1 and _holds(chosen[0][1], 1)


def test_every_pool_with_slices_wanted_gets_its_whole_gpus(programme_of):
    # The A100's pool (0: 1g.10gb, 9728 MiB, 7 to a card; 7g.80gb the whole card) and the H200's (1),
    # each cut as a mix on its GPUs. The H200 pool has a declared GPU and two auto ones: 2 GPUs cut
    # there, of which 1 auto GPU converted; 8 1g.18gb slices need both GPUs.
    candidates = [MigCandidate("n0", 0, A100, False, "t"), MigCandidate("n1", 0, H200, True, "t")] + \
        [MigCandidate("n2", i, H200, False, "t") for i in (0, 1)]
    programme, values = programme_of(_replicas("a", 2, 10) + _replicas("x", 2, 8, (A100,)), candidates)
    values = _fractional(programme, values, 1, 8, gpus=2)
    values[programme.A + 1] = 1
    values[_column(programme, 0, {"1g.10gb": 7})] = 0.5
    values[_column(programme, 0, {"7g.80gb": 1})] = 0.5
    values[programme.S + programme.kinds.index((0, ("mem", 9728)))] = 2
    values[programme.G] = 1
    chosen = programme.whole_gpus(values)
    a100 = [(p, n) for k, p, n in chosen if k == 0]
    h200 = [(p, n) for k, p, n in chosen if k == 1]
    assert len(a100) == 1 and a100[0][1] == 1 and a100[0][0].get("1g.10gb", 0) >= 2
    assert sum(n for _p, n in h200) == 2 and sum(n * p.get("1g.18gb", 0) for p, n in h200) >= 8


def test_a_pool_of_fixed_layouts_whose_slices_are_all_given_wants_nothing(programme_of):
    # The A100 is fixed at 7g.80gb and its one slice is given (60 GiB): nothing more wanted
    # there, and it has no pattern to cut; the H200s' mix still becomes a whole GPU.
    candidates = [MigCandidate("n0", 0, A100, True, "t", (("7g.80gb", 1),))] + \
        [MigCandidate("n1", i, H200, False, "t") for i in (0, 1)]
    programme, values = programme_of(_replicas("a", 2, 10) + _replicas("x", 1, 60, (A100,)), candidates)
    assert programme.pool_columns[0] == ()
    values = _fractional(programme, values, 1, 2)
    values[programme.S + programme.kinds.index((0, ("mem", 80896)))] = 1
    chosen = programme.whole_gpus(values)
    assert len(chosen) == 1 and chosen[0][0] == 1 and _holds(chosen[0][1], 2)


def _recut_as_a_71168_mix(programme, values):
    """The whole GPUs for the re-cut GPU of pool 0 as a mix: half 3g.71gb + 4g.71gb (two 71168 MiB
    slices), half 7g.141gb; the slices given as in ``values``."""
    values = values.copy()
    values[:programme.A] = 0.0
    values[_column(programme, 0, {"3g.71gb": 1, "4g.71gb": 1})] = 0.5
    values[_column(programme, 0, {"7g.141gb": 1})] = 0.5
    return programme.whole_gpus(values)


def _one_gpu_holds_a_71168_slice(chosen):
    assert len(chosen) == 1 and chosen[0][2] == 1
    assert sum(n for name, n in chosen[0][1].items() if MEMORY[name] == 71168) >= 1


def _stable_programme(programme_of):
    # GPU 0 cut as NOW keeps its layout (a on 2g.35gb, b on two 1g.18gb, a spare 3g.71gb); c and d
    # (60 GiB each) need two 71168 MiB slices: the spare one and one on GPU 1, re-cut.
    demands = _replicas("a", 1, 20) + _replicas("b", 2, 10) + _replicas("c", 1, 60) + _replicas("d", 1, 60)
    candidates = [MigCandidate("n1", 0, H200, True, "t", None, (), CUT, NOW), MigCandidate("n1", 1, H200, False, "t")]
    return programme_of(demands, candidates)


def test_slices_of_kept_layouts_are_not_wanted_again(programme_of):
    programme, values = _stable_programme(programme_of)
    # Given: two 71168 MiB slices, of which the kept GPU has one: one more wanted.
    _one_gpu_holds_a_71168_slice(_recut_as_a_71168_mix(programme, values))


def test_fractional_routes_with_replicas_staying_in_place(programme_of):
    programme, values = _stable_programme(programme_of)
    values = values.copy()
    kind = {(c, k[1]): programme.Z + j for j, (c, _k, k) in enumerate(programme.z)}
    cls = {members[0].workload: c for c, (_key, members) in enumerate(programme.classes)}
    a, b, cd = cls["a"], cls["b"], cls["c"]
    values[programme.Z:programme.Z + len(programme.z)] = 0.0
    # slices given: one 16384, one 33024, three 71168. b: one on 16384, half on each of the others;
    # a: half on each of 33024 and 71168; c and d on 71168. One of b's replicas stays on its 1g.18gb.
    values[kind[(b, 16384)]], values[kind[(b, 33024)]], values[kind[(b, 71168)]] = 1, 0.5, 0.5
    values[kind[(a, 33024)]], values[kind[(a, 71168)]] = 0.5, 0.5
    values[kind[(cd, 71168)]] = 2
    values[programme.S:programme.Z] = [1, 1, 3, 0]
    values[programme.Y:] = [1 if c == b else 0 for _g, c, _k, _n, _j in programme.y]
    routes = programme.route_counts(values)
    per_class, per_kind = {}, {}
    for c, _k, k, n in routes:
        per_class[c] = per_class.get(c, 0) + n
        per_kind[k[1]] = per_kind.get(k[1], 0) + n
    assert per_class == {a: 1, b: 2, cd: 2} and per_kind == {16384: 1, 33024: 1, 71168: 3}
    assert (b, 0, ("mem", 16384), 1) in routes


def test_slices_of_every_kept_group_are_not_wanted_again(programme_of):
    # Two kept groups in one pool: GPU 0 cut 5 x 1g.18gb (b's five replicas at 0-4) + 1g.35gb at 6
    # (a); GPU 1 cut 7 x 1g.18gb (e's seven). c (60 GiB) needs a 71168 MiB slice: GPU 2 is re-cut.
    # Given: 12 x 16384 MiB (5 + 7, all on the kept GPUs), 1 x 33024, 1 x 71168. As a mix (half
    # 3g.71gb + 4g.71gb, half 7g.141gb) GPU 2 must become one whole GPU holding one 71168 MiB slice;
    # asking it for any of the 1g.18gb slices too would not fit beside it.
    g0 = tuple(("1g.18gb", i, "b", i) for i in range(5)) + (("1g.35gb", 6, "a", 0),)
    g1 = tuple(("1g.18gb", i, "e", i) for i in range(7))
    candidates = [MigCandidate("n1", 0, H200, True, "t", None, (), (("1g.18gb", 5), ("1g.35gb", 1)), g0),
                  MigCandidate("n1", 1, H200, True, "t", None, (), (("1g.18gb", 7),), g1),
                  MigCandidate("n1", 2, H200, False, "t")]
    demands = _replicas("a", 1, 20) + _replicas("b", 5, 10) + _replicas("e", 7, 10) + _replicas("c", 1, 60)
    programme, values = programme_of(demands, candidates)
    assert len(programme.keep) == 2 and list(values[programme.KU:programme.KI]) == [1, 1]
    _one_gpu_holds_a_71168_slice(_recut_as_a_71168_mix(programme, values))


def test_integer_routes_keep_on_each_kind_the_replicas_that_stay_there_from_every_group(programme_of):
    # Two kept groups of H200s in pool 1 (pool 0: an A100, so that e, which may also run on A100,
    # is a class of its own beside b; both need 20 GiB). GPU 0 is cut 2 x 2g.35gb + 3g.71gb with
    # b/0 and e/0 on the 2g.35gb slices; GPU 2 is cut 2 x 1g.18gb + 2g.35gb + 3g.71gb with e/1 on
    # its 2g.35gb. Given: three 33024 MiB slices and two 71168 MiB ones; e (3 replicas) half a
    # replica on 71168, b (2) one and a half. Both of e's replicas on 2g.35gb stay, one in each
    # group: integer routes must put at least 2 of e on 33024 MiB, whatever else they choose.
    g0 = (("2g.35gb", 0, "b", 0), ("2g.35gb", 2, "e", 0), ("3g.71gb", 4, None, None))
    g2 = (("2g.35gb", 0, "e", 1), ("1g.18gb", 2, None, None), ("1g.18gb", 3, None, None), ("3g.71gb", 4, None, None))
    candidates = [MigCandidate("n1", 0, H200, True, "t", None, (), (("2g.35gb", 2), ("3g.71gb", 1)), g0),
                  MigCandidate("n1", 2, H200, True, "t", None, (), (("1g.18gb", 2), ("2g.35gb", 1), ("3g.71gb", 1)), g2),
                  MigCandidate("n1", 1, H200, False, "t"), MigCandidate("n2", 0, A100, False, "t")]
    demands = _replicas("b", 2, 20) + _replicas("e", 3, 20, (H200, A100))
    programme, values = programme_of(demands, candidates)
    cls = {members[0].workload: c for c, (_key, members) in enumerate(programme.classes)}
    b, e = cls["b"], cls["e"]
    h200 = programme.pools.index(next(pool for pool in programme.pools if pool.model == H200))
    column = {z: programme.Z + j for j, z in enumerate(programme.z)}
    values = values.copy()
    values[programme.S:programme.Z] = 0.0
    values[_kind(programme, h200, 33024)], values[_kind(programme, h200, 71168)] = 3, 2
    values[programme.Z:programme.Z + len(programme.z)] = 0.0
    for c, mib, share in ((e, 33024, 2.5), (e, 71168, 0.5), (b, 33024, 0.5), (b, 71168, 1.5)):
        values[column[(c, h200, ("mem", mib))]] = share
    staying = [(c, kind) for _group, c, kind, _n, _j in programme.y]
    assert sorted(staying) == sorted([(b, ("mem", 33024)), (e, ("mem", 33024)), (e, ("mem", 33024))])
    values[programme.Y:] = [1 if c == e else 0 for c, _kind in staying]
    routes = {(c, kind[1]): n for c, k, kind, n in programme.route_counts(values) if k == h200}
    assert routes.get((e, 33024), 0) >= 2
    assert sum(n for (c, _m), n in routes.items() if c == e) == 3 and sum(n for (c, _m), n in routes.items() if c == b) == 2
    assert sum(n for (_c, m), n in routes.items() if m == 33024) == 3 and sum(n for (_c, m), n in routes.items() if m == 71168) == 2
