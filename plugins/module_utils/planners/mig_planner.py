# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choose MIG layouts: which profiles each MIG GPU is cut into and which slice each
service replica gets.

The choice is an integer programme over *patterns* (every placement-feasible multiset of
profiles on one GPU of a model, see mig_geometry), solved with HiGHS through scipy.
Objectives, in strict order, each solved to proven optimality before the next:

1. convert the fewest ``auto`` GPUs to MIG (GPUs declared ``mig`` are MIG anyway);
2. host the services on the fewest GPUs;
3. waste the least memory (sum of slice memory minus what each replica needs).

Its size does not grow with the fleet: replicas that fit the same slices are one class
(however many distinct memory sizes they ask for), slices of the same memory are one kind
for replicas that are not pinned to a profile, and counts of GPUs and replicas are
numbers in the programme, not columns. So the result is exact and the same on every run;
each objective has a safety time limit that a normal fleet never meets, and if one is met
the best layout found is kept and reported as not exact (MigSolve), never refused.
Leftover capacity on each GPU is then carved into the largest profiles that still fit,
or left unpartitioned (policy).

Stable re-planning: given the state the GPUs are in now (MigCandidate.current and
current_slices, e.g. the previous plan), the fewest GPUs are re-partitioned (their profile
counts change, so they must be drained) before objectives 1-3, and then the most replicas
stay on the slices they are on. A GPU kept as it is offers all its slices, spare ones too.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from math import inf

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG, fewest_compute
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import gib


@dataclass(frozen=True)
class MigDemand:
    """One replica of a service that needs a MIG slice."""
    workload: str
    team: str
    replica: int
    need_mib: int
    models: tuple[str, ...]          # catalogue keys it may run on
    profile: str | None = None       # pinned profile, else any with enough memory
    path: str = ""


@dataclass(frozen=True)
class MigCandidate:
    """A GPU that may carry MIG slices."""
    node: str
    index: int
    model: str
    declared: bool                    # mode: mig in the inventory (else auto)
    team: str | None = None           # owner of slices no service takes
    layout: tuple[tuple[str, int], ...] | None = None   # fixed by the inventory
    forbidden: tuple[str, ...] = ()   # profiles this GPU must not use (see sharing_planner)
    # The state the GPU is in now (stable re-planning, see plan_mig): its profile counts,
    # sorted (profile, count) pairs (None: not in MIG mode now, or nothing known), and
    # (profile, start, workload, replica) of each slice now (workload None: a spare slice).
    current: tuple[tuple[str, int], ...] | None = None
    current_slices: tuple[tuple[str, int, str | None, int | None], ...] = ()


@dataclass
class MigSlice:
    profile: str
    start: int
    size: int
    memory_mib: int
    team: str | None = None
    workload: str | None = None
    replica: int | None = None


@dataclass
class MigLayout:
    node: str
    index: int
    model: str
    slices: list[MigSlice] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for s in self.slices:
            out[s.profile] += 1
        return dict(sorted(out.items()))

    def as_current(self) -> dict:
        """This layout as a MigCandidate's current state (``current``, ``current_slices``),
        for re-planning from it."""
        return {"current": tuple(sorted(self.counts().items())),
                "current_slices": tuple((s.profile, s.start, s.workload, s.replica) for s in self.slices)}


class MigShortfall(Exception):
    """The services cannot be fitted; the message says by how much and what would fit."""


def plan_mig(demands: list[MigDemand], candidates: list[MigCandidate], carve_leftover: bool = True,
             time_limit: float = 20.0, solve: MigSolve | None = None, stable: bool | None = None,
             current_known: bool | None = None) -> dict[tuple[str, int], MigLayout]:
    """Layouts for every GPU that ends up in MIG mode, keyed by (node, index).

    ``time_limit`` (seconds per objective) is a safety net, not part of the normal path;
    ``solve``, if given, is filled in with how the programme was solved (MigSolve).

    Stable re-planning: when the current state of the GPUs is known (``current_known``;
    by default, when some candidate has ``current`` or ``current_slices``), a candidate
    whose ``current`` is None is not in MIG mode now, and with ``stable`` (by default:
    whenever the current state is known) the fewest GPUs are re-partitioned, before the
    three objectives of STAGES: a GPU is re-partitioned when its final profile counts
    (MigLayout.counts()) differ from ``current``. A GPU that keeps its current layout keeps
    exactly its slices, where they are, and its replicas stay on them as far as the
    objectives allow (the most replicas kept in place, solved last). ``solve.repartitioned``
    is the number of GPUs re-partitioned (also with ``stable=False``, as a measure) and
    ``solve.stable`` the new objective's status; ``solve.as_dict()`` does not change.
    Without a known current state the result is the one of a plan from scratch.
    """
    if current_known is None:
        current_known = stable is True or any(c.current is not None or c.current_slices for c in candidates)
    stable = current_known if stable is None else bool(stable) and current_known
    if stable:
        solve = solve if solve is not None else MigSolve()
        layouts = _plan_stable(demands, candidates, carve_leftover, time_limit, solve)
        _measure_changes(layouts, candidates, solve)
        return layouts
    pools = _pools(candidates)
    # Declared MIG GPUs stay MIG even when no service needs them; auto ones only when used.
    in_mig = {(c.node, c.index) for c in candidates if c.declared or c.layout is not None}
    assignment: dict[tuple[str, int], list[tuple[str, MigDemand]]] = defaultdict(list)
    if demands:
        patterns, routes = _solve(demands, pools, time_limit, solve if solve is not None else MigSolve())
        _realise(patterns, routes, pools, in_mig, assignment)
    layouts = {}
    by_key = {(c.node, c.index): c for c in candidates}
    for key in sorted(in_mig):
        c = by_key[key]
        if c.layout is not None:
            used = dict(c.layout)
        else:
            used = _profile_counts(assignment[key])
            if carve_leftover:
                used = mig_geometry.carve(CATALOG[c.model], used, _allowed(c))
        layouts[key] = _layout(c, used, assignment[key])
    if current_known and solve is not None:
        _measure_changes(layouts, candidates, solve)
    return layouts


def _allowed(c: MigCandidate, extra: tuple[str, ...] = ()) -> list[str]:
    return list(_allowed_names(c.model, tuple(c.forbidden), tuple(extra)))


@lru_cache(maxsize=1024)
def _allowed_names(model_key: str, forbidden: tuple[str, ...], extra: tuple[str, ...]) -> tuple[str, ...]:
    names = {p.name for p in CATALOG[model_key].base_profiles} | set(extra)
    return tuple(sorted(names - set(forbidden)))


@dataclass
class _Pool:
    model: str
    forbidden: tuple[str, ...]
    declared: list[MigCandidate]
    auto: list[MigCandidate]
    fixed: list[MigCandidate]

    @property
    def fixed_supply(self) -> dict[str, int]:
        supply: dict[str, int] = defaultdict(int)
        for gpu in self.fixed:
            for name, n in gpu.layout:
                supply[name] += n
        return dict(supply)


def _pools(candidates: list[MigCandidate]) -> list[_Pool]:
    pools: dict[tuple, _Pool] = {}
    for c in sorted(candidates, key=lambda c: (c.node, c.index)):
        key = (c.model, tuple(sorted(c.forbidden)))
        pool = pools.setdefault(key, _Pool(c.model, key[1], [], [], []))
        if c.layout is not None:
            pool.fixed.append(c)
        elif c.declared:
            pool.declared.append(c)
        else:
            pool.auto.append(c)
    # Auto GPUs on servers that already carry MIG first: keeps other servers whole.
    mig_nodes = {c.node for c in candidates if c.declared}
    for pool in pools.values():
        pool.auto.sort(key=lambda c: (c.node not in mig_nodes, c.node, c.index))
    return [pools[k] for k in sorted(pools)]


def _slots_of(model, name: str, pinned: tuple[str, ...]) -> list[tuple]:
    """What one slice of ``name`` offers in the programme.

    A replica that is not pinned only needs memory, so slices of the same memory are one
    kind, ("mem", MiB): 1g.35gb and 2g.35gb on an H200 (or 3g.71gb and 4g.71gb) are
    interchangeable for it, and treating them as one removes ties HiGHS would otherwise have
    to branch through. A pinned profile is also its own kind, ("pin", name).
    """
    profile = model.profile(name)
    kinds = [] if profile.variant else [("mem", profile.memory_mib)]
    return kinds + ([("pin", name)] if name in pinned else [])


def _supply(model, counts, pinned) -> dict[tuple, int]:
    supply: dict[tuple, int] = defaultdict(int)
    for name, n in counts:
        for kind in _slots_of(model, name, pinned):
            supply[kind] += n
    return dict(supply)


@lru_cache(maxsize=256)
def _columns(model_key: str, names: tuple[str, ...], pinned: tuple[str, ...]):
    """The patterns worth a column, each with its supply of slice kinds.

    A pattern whose supply another pattern's covers is dropped: a GPU cut with more slices
    than its replicas use is as good (only the used slices are kept, then the rest is
    carved). Of patterns with the same supply the one with the most compute stays. On a
    7-way GPU 10 of the 77 patterns are left.
    """
    import numpy as np

    model = CATALOG[model_key]
    ranked = sorted(mig_geometry.patterns(model_key, names),
                    key=lambda p: (-sum(model.profile(n).compute_slices * c for n, c in p), p))
    supplies = [_supply(model, p, pinned) for p in ranked]
    kinds = sorted({kind for supply in supplies for kind in supply})
    table = np.array([[supply.get(kind, 0) for kind in kinds] for supply in supplies]).reshape(len(ranked), len(kinds))
    at_least = (table[:, None, :] >= table[None, :, :]).all(axis=2)      # [j, i]: j's supply covers i's
    same = at_least & at_least.T
    earlier = np.tri(len(ranked), k=-1, dtype=bool).T                    # [j, i]: j < i
    covered = ((at_least & ~same) | (same & earlier)).any(axis=0)
    return tuple((p, supplies[i]) for i, p in enumerate(ranked) if supplies[i] and not covered[i])


def _offered(pools: list[_Pool], pool_names) -> dict[str, dict[str, int]]:
    """Per model, the profiles some pool of it can give (name -> memory MiB)."""
    offered: dict[str, dict[str, int]] = defaultdict(dict)
    for k, pool in enumerate(pools):
        model = CATALOG[pool.model]
        names = set(pool_names[k]) if pool.declared or pool.auto else set()
        for name in names | set(pool.fixed_supply):
            offered[pool.model][name] = model.profile(name).memory_mib
    return offered


def _classes(demands: list[MigDemand], offered: dict[str, dict[str, int]]):
    """Replicas grouped by the (model, profile) slices that can hold them (and the pinned
    profile), sorted by that key.

    Replicas that fit exactly the same slices are interchangeable in the programme, so the
    number of classes is bounded by the profile memory thresholds of the offered models,
    not by how many distinct memory sizes the services ask for. A key with no slices means
    no GPU here can hold the replica.
    """
    ladders: dict[tuple, tuple[list[int], list[tuple[str, str]]]] = {}
    keys: dict[tuple, tuple] = {}
    classes: dict[tuple, list[MigDemand]] = defaultdict(list)
    for d in demands:
        ladder = ladders.get((d.models, d.profile))
        if ladder is None:
            # The slices a replica of these models may use, by memory: those holding a given
            # need are a suffix of this list.
            slices = sorted((memory, model, name) for model in set(d.models)
                            for name, memory in offered.get(model, {}).items()
                            if (name == d.profile if d.profile else not CATALOG[model].profile(name).variant))
            ladder = ladders[(d.models, d.profile)] = ([s[0] for s in slices], [s[1:] for s in slices])
        memories, pairs = ladder
        cut = bisect_left(memories, d.need_mib)
        key = keys.get((d.models, d.profile, cut))
        if key is None:
            key = keys[(d.models, d.profile, cut)] = (tuple(sorted(pairs[cut:])), d.profile or "")
        classes[key].append(d)
    return sorted(classes.items())


# Objectives in strict lexicographic order, by their name in plan.json.
STAGES = ("auto_gpus_converted", "gpus_used", "slice_memory_mib")
# Stages solved without HiGHS's presolve. Measured (benchmarks/mig_solver.py, 14 seeds): presolve
# makes the root cuts for the memory objective slower (0.4-3.9 s, without it 0.5-2.0 s); and
# (benchmarks/replan_fleet.py) the replicas kept in place take 1-2 s with it and 0.3-1 s without.
_NO_PRESOLVE = ("slice_memory_mib", "replicas_kept")
_STATUS = {0: "optimal", 1: "time limit", 2: "infeasible", 3: "unbounded", 4: "failed"}


@dataclass
class MigSolve:
    """How the MIG programme was solved; plan.json carries ``as_dict()`` as ``mig_solve``.

    ``exact`` is false only when a stage stopped at the safety time limit: the layout is
    then the best one found (feasible, every replica placed) but not proven optimal, and
    ``gap`` is the largest relative gap HiGHS reported (None where it had no bound).
    """
    exact: bool = True
    gap: float | None = 0.0
    seconds: float = 0.0
    time_limit: float = 0.0
    classes: int = 0
    columns: int = 0
    rows: int = 0
    stages: list[dict] = field(default_factory=list)
    stage_seconds: list[float] = field(default_factory=list)
    whole_patterns: bool = False      # solved again with whole GPUs per pattern (see _solve)
    # Stable re-planning (plan_mig with a current state), kept out of as_dict: plan.json is the
    # same whether or not the previous plan was known. ``repartitioned``: GPUs whose profile
    # counts change (None without a current state); ``moved``: replicas that were on a slice
    # and are now on another; ``stable`` and ``stays``: the first and last objectives, as the
    # ``stages`` entries with their seconds ({"objective": "gpus_repartitioned", ...} and
    # {"objective": "replicas_kept", ...}).
    repartitioned: int | None = None
    moved: int | None = None
    stable: dict | None = None
    stays: dict | None = None

    def as_dict(self) -> dict:
        # Seconds only when not exact: an exact plan must be the same file on every run
        # (the plan playbook is idempotent); a time-limited one already depends on load.
        out = {"exact": self.exact, "gap": self.gap, "classes": self.classes, "stages": self.stages}
        if not self.exact:
            out.update(seconds=round(self.seconds, 1), time_limit_s=self.time_limit)
        return out


def summary_line(mig_solve: dict | None, where: str = "") -> str | None:
    """One line for the plan module's summary when a MIG layout is not proven optimal."""
    if not mig_solve or mig_solve["exact"]:
        return None
    stopped = [s["objective"] for s in mig_solve["stages"] if s["status"] != "optimal"] or ["gpus_repartitioned"]
    gap = mig_solve["gap"]
    return ("MIG layout%s: best found in %.1f s, not proven optimal (%s stopped at the %g s limit, gap %s)"
            % (where, mig_solve["seconds"], ", ".join(stopped), mig_solve["time_limit_s"],
               "unknown" if gap is None else "%.3g %%" % (100 * gap)))


def _solve(demands: list[MigDemand], pools: list[_Pool], time_limit: float, solve: MigSolve, stable=None):
    started = time.perf_counter()
    pinned = tuple(sorted({d.profile for d in demands if d.profile}))
    pool_names, pool_columns = [], []
    for pool in pools:
        model = CATALOG[pool.model]
        pins = tuple(p for p in pinned if p in {q.name for q in model.mig_profiles})
        names = tuple(_allowed(MigCandidate("", 0, pool.model, True, forbidden=pool.forbidden), pins))
        pool_names.append(names)
        pool_columns.append(_columns(pool.model, names, pinned) if (pool.declared or pool.auto) else ())
    classes = _classes(demands, _offered(pools, pool_names))
    if not classes[0][0][0]:     # sorted first; the programme could not even be written down
        raise MigShortfall(_explain_shortfall(classes, pools, pool_names, hopeless=classes[0][1]))
    if stable is not None:
        stable.attach(classes)
    programme = _Programme(classes, pools, pool_names, pool_columns, pinned, stable)
    solve.classes, solve.columns, solve.rows = len(classes), programme.n, programme.rows
    solve.time_limit = time_limit
    # Fast path: GPUs per pattern continuous, slices per kind integer. The solution is then
    # cut into whole GPUs per pool (a tiny programme each); should some pool's slices not
    # come out of whole GPUs, everything is solved again with whole GPUs per pattern.
    values = _stages(programme, time_limit, solve, whole_patterns=False)
    chosen = programme.whole_gpus(values)
    if chosen is None:
        solve.whole_patterns = True
        values = _stages(programme, time_limit, solve, whole_patterns=True)
        chosen = programme.whole_gpus(values)
    if stable is not None:
        result = chosen, programme.route_counts(values), programme.keeps(values), classes
        solve.seconds = time.perf_counter() - started
        return result
    routes = programme.routes(values)
    solve.seconds = time.perf_counter() - started
    return chosen, routes


class _Programme:
    """The integer programme. Column blocks, in order:

    p[pool, pattern]      GPUs cut to that pattern (see _columns)
    a[pool]               auto GPUs converted      g[pool]  GPUs cut
    s[pool, slice kind]   slices of that kind given to replicas
    z[class, pool, kind]  replicas of a class on slices of that kind

    Why p and z may be fractional while solving (branching on them is what made the
    programme slow): given integer slice counts s, the replicas' routes z are a
    transportation problem (each z is in one class row and in a chain of slice rows, a
    pinned profile within its memory), whose optimum is integral, so ``routes`` finds
    integer routes for the same s. And integer slice counts that g GPUs hold as a
    fractional mix of patterns can nearly always be cut from g whole GPUs (on every
    fleet of the tests and benchmark so far): ``whole_gpus`` does that on each solution
    rather than trust it, and _solve solves again with whole GPUs per pattern where it
    cannot (MigSolve.whole_patterns). The memory given depends only on s,
    so the third objective is integral too, which HiGHS uses to prune.

    With a current state (``stable``, see _Stable) the GPUs of each pool are in groups of
    the same current profile counts (or none) and the same declared mode, and four blocks
    follow:

    ku[group], ki[group]  GPUs that keep their current layout and host replicas / host none
    r[group]              GPUs re-cut with a pattern (sum over the pool's groups = g)
    y[group, class, kind] replicas of a class that stay on the slices they are on now

    a kept GPU gives every slice of its current layout; a = the pool's auto GPUs kept or
    re-cut; GPUs re-partitioned = MIG-now GPUs not kept + auto GPUs not MIG now and re-cut
    (+ GPUs that change whatever the plan: declared ones not MIG now, fixed layouts other
    than the current one). Objectives: GPUs re-partitioned, then STAGES (GPUs used = g + ku),
    then the most replicas kept in place. The size still does not grow with the fleet: a
    group is a distinct layout of a pool, and y has at most one column per kind of slice
    each class is on now in each group.
    """

    def __init__(self, classes, pools, pool_names, pool_columns, pinned, stable=None):
        import numpy as np
        from scipy.sparse import coo_matrix

        self.classes, self.pools, self.pool_names, self.pinned = classes, pools, pool_names, pinned
        self.patterns = [(k, dict(pattern), supply) for k, columns in enumerate(pool_columns)
                         for pattern, supply in columns]
        self.pool_columns = pool_columns
        pools_of = defaultdict(list)
        for k, pool in enumerate(pools):
            pools_of[pool.model].append(k)
        z = {}
        for c, ((pairs, pin), _members) in enumerate(classes):
            for model_key, name in pairs:
                memory = CATALOG[model_key].profile(name).memory_mib
                for k in pools_of[model_key]:
                    if name in pool_names[k] or name in pools[k].fixed_supply:
                        z[(c, k, ("pin", name) if pin else ("mem", memory))] = None
        self.z = list(z)
        uses = defaultdict(list)           # (pool, kind) -> z columns drawing on it
        for j, (_c, k, kind) in enumerate(self.z):
            # A pinned replica on a base profile also takes a slice of that memory.
            for used in ([kind] if kind[0] == "mem" else _slots_of(CATALOG[pools[k].model], kind[1], pinned)):
                uses[(k, used)].append(j)
        self.kinds = sorted(uses)
        self.uses = uses
        P, K = len(pools), len(self.kinds)
        self.A = len(self.patterns)
        self.G = self.A + P
        self.S = self.G + P
        self.Z = self.S + K
        self.n = self.Z + len(self.z)
        self.stable = stable
        if stable is not None:
            self._stable_columns(stable)
        self.fixed = [_supply(CATALOG[pool.model], pool.fixed_supply.items(), pinned) for pool in pools]

        entries, lo, hi = [], [], []

        def constraint(terms, low, high):
            entries.extend((len(lo), col, val) for col, val in terms)
            lo.append(low)
            hi.append(high)

        by_pool = defaultdict(list)
        for j, (k, _pattern, _kinds) in enumerate(self.patterns):
            by_pool[k].append(j)
        for k, pool in enumerate(pools):
            constraint([(j, 1) for j in by_pool[k]] + [(self.G + k, -1)], 0, 0)
            if stable is None:
                # a_k >= GPUs cut beyond the declared ones
                constraint([(self.A + k, 1), (self.G + k, -1)], -len(pool.declared), np.inf)
            else:
                self._stable_pool_rows(k, constraint)
        of_class = defaultdict(list)
        for j, (c, _k, _kind) in enumerate(self.z):
            of_class[c].append(self.Z + j)
        for c, (_key, members) in enumerate(classes):
            constraint([(col, 1) for col in of_class[c]], len(members), len(members))
        for i, (k, kind) in enumerate(self.kinds):
            constraint([(self.S + i, 1)] + [(self.Z + j, -1) for j in uses[(k, kind)]], 0, 0)
            # slices given <= slices in the chosen patterns + fixed layouts
            supply = [(j, -self.patterns[j][2][kind]) for j in by_pool[k] if self.patterns[j][2].get(kind)]
            if stable is not None:
                supply += [(self.KU + n, -self.group_supply[g].get(kind, 0)) for n, g in enumerate(self.keep)
                           if self.stable.groups[g].pool == k and self.group_supply[g].get(kind)]
            constraint([(self.S + i, 1)] + supply, -np.inf, self.fixed[k].get(kind, 0))
        if stable is not None:
            self._stable_rows(constraint)
        rows, cols, vals = zip(*entries)
        self.matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), self.n)).tocsr()
        self.lo, self.hi, self.rows = np.array(lo), np.array(hi), len(lo)
        size = [len(pool.declared) + len(pool.auto) for pool in pools]
        upper = np.zeros(self.n)
        for j, (k, _pattern, _kinds) in enumerate(self.patterns):
            upper[j] = size[k]
        upper[self.A:self.G] = [len(pool.auto) for pool in pools]
        upper[self.G:self.S] = size
        upper[self.S:self.Z] = [sum(len(classes[self.z[j][0]][1]) for j in uses[kk]) for kk in self.kinds]
        upper[self.Z:self.Z + len(self.z)] = [len(classes[c][1]) for c, _k, _kind in self.z]
        self.upper = upper
        self.objectives = [np.zeros(self.n) for _stage in STAGES]
        self.objectives[0][self.A:self.G] = 1
        self.objectives[1][self.G:self.S] = 1
        # Memory wasted = slice memory given minus the needs, and the needs are fixed:
        # minimising the memory given is the same, whatever each replica needs.
        for i, (k, (how, what)) in enumerate(self.kinds):
            profile = None if how == "mem" else CATALOG[pools[k].model].profile(what)
            if how == "mem" or profile.variant:     # a pinned base profile is counted by its memory row
                self.objectives[2][self.S + i] = what if how == "mem" else profile.memory_mib
        self.stage_names = STAGES
        self.reported: dict[str, tuple[int, int]] = {}     # stage -> (sign, constant) of its value
        if stable is not None:
            self._stable_objectives()

    def integrality(self, whole_patterns: bool):
        import numpy as np
        integrality = np.zeros(self.n)
        integrality[:self.A] = 1 if whole_patterns else 0
        integrality[self.A:self.Z] = 1
        if self.stable is not None:
            integrality[self.Z + len(self.z):] = 1
        return integrality

    def whole_gpus(self, values):
        """Whole GPUs per pattern that give the slices ``values`` counts, or None."""
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp

        integral = np.all(np.abs(values[:self.A] - np.round(values[:self.A])) < 1e-6)
        if integral:
            return [(k, pattern, int(round(values[j]))) for j, (k, pattern, _s) in enumerate(self.patterns)
                    if round(values[j])]
        chosen = []
        for k, columns in enumerate(self.pool_columns):
            kept = self._kept_supply(values, k)
            wanted = {kind: round(values[self.S + i]) - self.fixed[k].get(kind, 0) - kept.get(kind, 0)
                      for i, (kk, kind) in enumerate(self.kinds) if kk == k}
            wanted = {kind: n for kind, n in wanted.items() if n > 0}
            if not wanted:
                continue
            if not columns:       # only fixed layouts here, and they do not hold it: no shortcut
                return None
            # Fewest GPUs of this pool whose patterns hold the wanted slices.
            matrix = np.array([[supply.get(kind, 0) for _pattern, supply in columns] for kind in wanted])
            gpus = round(values[self.G + k])
            result = milp(np.ones(len(columns)), integrality=np.ones(len(columns)),
                          bounds=Bounds(0, gpus),
                          constraints=[LinearConstraint(matrix, list(wanted.values()), np.inf),
                                       LinearConstraint(np.ones((1, len(columns))), 0, gpus)])
            if result.x is None:
                return None
            chosen += [(k, dict(pattern), int(round(x))) for (pattern, _s), x in zip(columns, result.x) if round(x)]
        return chosen

    def routes(self, values):
        """(replica queue, pool, kind, count): integer routes for the slice counts in ``values``."""
        # Each class's replicas are handed out in order along its routes; any member fits
        # any slice of the class, so which one goes where changes no objective.
        queues = [iter(members) for _key, members in self.classes]
        return [(queues[c], k, kind, count) for c, k, kind, count in self.route_counts(values)]

    def route_counts(self, values):
        """(class, pool, kind, count): integer routes for the slice counts in ``values``."""
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix

        z = values[self.Z:self.Z + len(self.z)]
        if np.any(np.abs(z - np.round(z)) > 1e-6):
            # With the slice counts fixed this is a transportation problem: its LP optimum
            # is integral, and the fractional z solved is a feasible point of it. (Replicas
            # that stay where they are, y, are lower bounds of their routes: integral too.)
            entries = [(i, j, 1) for i, kind in enumerate(self.kinds) for j in self.uses[kind]]
            entries += [(len(self.kinds) + c, j, 1) for j, (c, _k, _kind) in enumerate(self.z)]
            rows, cols, vals = zip(*entries)
            matrix = coo_matrix((vals, (rows, cols)), shape=(len(self.kinds) + len(self.classes), len(self.z)))
            wanted = np.concatenate([np.round(values[self.S:self.Z]), [len(m) for _key, m in self.classes]])
            lower = 0 if self.stable is None else self._staying(values)
            result = milp(np.zeros(len(self.z)), integrality=np.ones(len(self.z)),
                          bounds=Bounds(lower, self.upper[self.Z:self.Z + len(self.z)]),
                          constraints=[LinearConstraint(matrix.tocsr(), wanted, wanted)])
            if result.x is None:
                raise MigShortfall("the MIG programme could not be solved: %s" % result.message)
            z = result.x
        z = np.round(z).astype(int)
        return [(c, k, kind, int(z[j])) for j, (c, k, kind) in enumerate(self.z) if z[j]]

    # --- stable re-planning (see the class docstring and _Stable) ---

    def _stable_columns(self, stable):
        groups = stable.groups
        self.keep = [g for g, group in enumerate(groups) if group.keepable]
        self.KU = self.n
        self.KI = self.KU + len(self.keep)
        self.R = self.KI + len(self.keep)
        self.Y = self.R + len(groups)
        self.group_supply = {g: _supply(CATALOG[self.pools[groups[g].pool].model], groups[g].current.items(),
                                        self.pinned) for g in self.keep}
        z_column = {z: j for j, z in enumerate(self.z)}
        self.y = []          # (group, class, kind, replicas that may stay, z column)
        for group in [groups[g] for g in self.keep] + stable.fixed_groups:
            for (c, kind), n in sorted(group.stayable.items()):
                j = z_column.get((c, group.pool, kind))
                if j is not None:
                    self.y.append((group, c, kind, n, j))
        self.n = self.Y + len(self.y)

    def _stable_pool_rows(self, k, constraint):
        groups = self.stable.groups
        mine = [g for g, group in enumerate(groups) if group.pool == k]
        # GPUs cut with a pattern = GPUs re-cut in the pool's groups
        constraint([(self.R + g, 1) for g in mine] + [(self.G + k, -1)], 0, 0)
        # auto GPUs converted = auto GPUs kept in MIG mode or re-cut
        terms = [(self.A + k, 1)]
        for g in mine:
            if not groups[g].declared:
                terms.append((self.R + g, -1))
                if groups[g].keepable:
                    n = self.keep.index(g)
                    terms += [(self.KU + n, -1), (self.KI + n, -1)]
        constraint(terms, 0, 0)

    def _stable_rows(self, constraint):
        groups = self.stable.groups
        position = {g: n for n, g in enumerate(self.keep)}
        for g, group in enumerate(groups):
            terms = [(self.R + g, 1)]
            if g in position:
                terms += [(self.KU + position[g], 1), (self.KI + position[g], 1)]
            constraint(terms, 0, len(group.gpus))
        # Replicas staying on slices of a kind in a pool are on that pool's routes of the kind.
        staying = defaultdict(list)
        for t, (_group, _c, _kind, _n, j) in enumerate(self.y):
            staying[j].append(self.Y + t)
        for j, columns in sorted(staying.items()):
            constraint([(col, 1) for col in columns] + [(self.Z + j, -1)], -inf, 0)
        # In a group, replicas stay only on the kept GPUs that host replicas, at most on the
        # ku GPUs with the most replicas that may stay: sum of the top ku of per_gpu, a concave
        # function of ku, is the least of its linear pieces (one per distinct count).
        of_group = defaultdict(list)
        for t, (group, _c, _kind, _n, _j) in enumerate(self.y):
            of_group[id(group)].append(self.Y + t)
        for g in self.keep:
            group = groups[g]
            if id(group) not in of_group:
                continue
            counts = sorted(group.per_gpu, reverse=True)
            for value in sorted(set(counts)):
                above = sum(1 for n in counts if n > value)
                top = sum(counts[:above])
                constraint([(col, 1) for col in of_group[id(group)]] + [(self.KU + position[g], -value)],
                           -inf, top - value * above)

    def _stable_upper(self, upper):
        groups = self.stable.groups
        for n, g in enumerate(self.keep):
            upper[self.KU + n] = upper[self.KI + n] = len(groups[g].gpus)
        for g, group in enumerate(groups):
            upper[self.R + g] = len(group.gpus)
        for t, (_group, _c, _kind, n, _j) in enumerate(self.y):
            upper[self.Y + t] = n

    def _stable_objectives(self):
        import numpy as np
        groups = self.stable.groups
        self._stable_upper(self.upper)
        repartitioned = np.zeros(self.n)
        repartitioned[self.KU:self.R] = -1          # every keepable group is MIG now
        for g, group in enumerate(groups):
            if group.current is None and not group.declared:
                repartitioned[self.R + g] = 1
        constant = sum(len(group.gpus) for group in groups if group.current is not None or group.declared)
        used = self.objectives[1].copy()
        used[self.KU:self.KI] = 1
        kept = np.zeros(self.n)
        kept[self.Y:] = -1
        self.objectives = [repartitioned, self.objectives[0], used, self.objectives[2], kept]
        self.stage_names = ("gpus_repartitioned",) + STAGES + ("replicas_kept",)
        self.reported = {"gpus_repartitioned": (1, constant + self.stable.fixed_changed), "replicas_kept": (-1, 0)}

    def _kept_supply(self, values, k) -> dict:
        if self.stable is None:
            return {}
        supply: dict[tuple, int] = defaultdict(int)
        for n, g in enumerate(self.keep):
            if self.stable.groups[g].pool == k:
                for kind, count in self.group_supply[g].items():
                    supply[kind] += count * round(values[self.KU + n])
        return supply

    def _staying(self, values):
        import numpy as np
        lower = np.zeros(len(self.z))
        for t, (_group, _c, _kind, _n, j) in enumerate(self.y):
            lower[j] += round(values[self.Y + t])
        return lower

    def keeps(self, values) -> dict[int, tuple[int, int, int]]:
        """Per group: (GPUs kept hosting replicas, kept hosting none, re-cut)."""
        out = {}
        position = {g: n for n, g in enumerate(self.keep)}
        for g in range(len(self.stable.groups)):
            n = position.get(g)
            out[g] = (0 if n is None else round(values[self.KU + n]), 0 if n is None else round(values[self.KI + n]),
                      round(values[self.R + g]))
        return out


def _stages(programme: _Programme, time_limit: float, solve: MigSolve, whole_patterns: bool):
    """Minimise each objective in turn, keeping the ones before at their values."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    constraints = [LinearConstraint(programme.matrix, programme.lo, programme.hi)]
    bounds = Bounds(np.zeros(programme.n), programme.upper)
    integrality = programme.integrality(whole_patterns)
    # mip_rel_gap 0: HiGHS's default (1e-4) lets a stage stop while a GPU could still be
    # saved on a fleet of 10,000. The time limit is a safety net; the normal path is far below.
    options = {"time_limit": time_limit, "mip_rel_gap": 0.0}
    solve.exact, solve.gap, solve.stages, solve.stage_seconds = True, 0.0, [], []
    values = None
    for stage, objective in zip(programme.stage_names, programme.objectives):
        started = time.perf_counter()
        presolve = stage not in _NO_PRESOLVE
        result = milp(objective, constraints=constraints, integrality=integrality, bounds=bounds,
                      options=dict(options, presolve=presolve))
        if result.status == 2 and values is not None and programme.stable is not None:
            # The previous stage's layout meets every constraint here, so this "infeasible" is
            # HiGHS's numerical error (seen without presolve on the memory objective, 16,000
            # GPUs, benchmarks/replan_fleet.py): solve the stage again with presolve the other way.
            result = milp(objective, constraints=constraints, integrality=integrality, bounds=bounds,
                          options=dict(options, presolve=not presolve))
        if result.status == 2 and values is None:
            raise MigShortfall(_explain_shortfall(programme.classes, programme.pools, programme.pool_names))
        if result.x is not None:
            values = result.x
        elif values is None:
            values = _any_layout(milp, constraints, integrality, bounds, programme)
        # else: stopped with nothing better than the previous stage's layout, which still holds.
        best = float(objective @ np.round(values))
        record = {"objective": stage, "status": _STATUS.get(result.status, "failed"), "value": int(round(best))}
        if stage in STAGES:
            solve.stage_seconds.append(time.perf_counter() - started)
            solve.stages.append(record)
        else:     # stable re-planning's objectives: not in as_dict (see MigSolve)
            sign, constant = programme.reported[stage]
            record.update(value=sign * record["value"] + constant, seconds=time.perf_counter() - started)
            if stage == "gpus_repartitioned":
                solve.stable = record
            else:
                solve.stays = record
        # Replicas kept in place are a preference, not an objective the plan is exact in.
        if result.status != 0 and stage != "replicas_kept":
            gap = getattr(result, "mip_gap", None) if result.x is not None else None
            solve.exact = False
            solve.gap = None if gap is None or solve.gap is None else max(solve.gap, float(gap))
        # Keep this objective at its value while the next one is minimised (values are integers).
        constraints.append(LinearConstraint(objective.reshape(1, -1), -np.inf, best + 0.5))
    return values


def _any_layout(milp, constraints, integrality, bounds, programme):
    """Some feasible layout, without a time limit: the first stage met its limit before HiGHS
    found any. With a zero objective the first layout found is optimal, so this ends as soon
    as there is one, or with a proof that there is none: never a refusal by the clock."""
    import numpy as np
    result = milp(np.zeros(programme.n), constraints=constraints, integrality=integrality, bounds=bounds)
    if result.x is None:
        if result.status == 2:
            raise MigShortfall(_explain_shortfall(programme.classes, programme.pools, programme.pool_names))
        raise MigShortfall("the MIG programme could not be solved: %s" % result.message)
    return result.x


_SHOWN = 20     # lines of services in a shortfall message


def _explain_shortfall(classes, pools, pool_names, hopeless=None) -> str:
    lines = ["the MIG services do not fit on the GPUs that may be cut with MIG:"]
    if hopeless:
        lines = ["no GPU that may be cut with MIG has a slice that holds these replicas:"]
        classes = [((), hopeless)]
    # Said per need, not per solver class: a class mixes sizes, a person thinks in services.
    groups: dict[tuple, list[MigDemand]] = defaultdict(list)
    for _key, members in classes:
        for d in members:
            groups[(-d.need_mib, d.models, d.profile or "")].append(d)
    shown_groups = sorted(groups.items())
    for (need, models, pin), members in shown_groups[:_SHOWN]:
        names = sorted({d.workload for d in members})
        shown = ", ".join(names[:4]) + (" and %d more" % (len(names) - 4) if len(names) > 4 else "")
        # In GiB, as memory_gib is written; a pinned profile that holds less than the replica
        # needs with its usable memory, which is less than its name says (1g.10gb: 9.5 GiB on
        # an A100 80GB).
        short = ["%s holds %s on %s" % (pin, gib(CATALOG[m].profile(pin).memory_mib), m) for m in models
                 if pin and pin in {p.name for p in CATALOG[m].mig_profiles} and CATALOG[m].profile(pin).memory_mib < -need]
        what = "%s with at least %s" % (pin, gib(-need)) if short else pin or "a slice with at least %s" % gib(-need)
        lines.append("  - %d replica(s) of %s need %s on %s%s" % (
            len(members), shown, what, ", ".join(models), " (%s)" % "; ".join(short) if short else ""))
    if len(shown_groups) > _SHOWN:
        lines.append("  - and %d replica(s) of other sizes" % sum(len(m) for _k, m in shown_groups[_SHOWN:]))
    for k, pool in enumerate(pools):
        model = CATALOG[pool.model]
        count = len(pool.declared) + len(pool.auto)
        names = pool_names[k] if count else ()
        biggest = max((model.profile(n).memory_mib for n in names), default=0)
        per_gpu = {}
        for pattern in (mig_geometry.patterns(pool.model, names) if names else ()):
            for name, c in pattern:
                per_gpu[name] = max(per_gpu.get(name, 0), c)
        lines.append("  - %s: %d GPU(s) free for MIG (+ fixed layouts %s); largest slice %s; per GPU at most %s"
                     % (model.key, count, dict(pool.fixed_supply) or "none", gib(biggest),
                        ", ".join("%d x %s" % (v, n) for n, v in sorted(per_gpu.items())) or "nothing"))
    lines.append("  Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model).")
    return "\n".join(lines)


def _realise(chosen_patterns, routes, pools, in_mig, assignment) -> None:
    """Give patterns to concrete GPUs (which so end up in MIG mode), then replicas to concrete slices."""
    slots: dict[tuple[int, str], list[tuple[str, int]]] = defaultdict(list)   # (pool, profile) -> GPU per slice
    by_memory: dict[tuple[int, int], list[str]] = defaultdict(list)          # (pool, MiB) -> base profiles
    for k, pool in enumerate(pools):
        # Fullest patterns on the first GPUs, so the GPUs left over stay whole.
        model = CATALOG[pool.model]
        mine = sorted(((pattern, count) for kk, pattern, count in chosen_patterns if kk == k),
                      key=lambda pc: -sum(model.profile(n).size * c for n, c in pc[0].items()))
        patterns = [pattern for pattern, count in mine for _copy in range(count)]
        # Slices the inventory fixed are filled first: they exist whatever the plan.
        gpus = [((gpu.node, gpu.index), dict(gpu.layout)) for gpu in pool.fixed]
        for gpu, pattern in zip(pool.declared + pool.auto, patterns):
            in_mig.add((gpu.node, gpu.index))
            gpus.append(((gpu.node, gpu.index), dict(pattern)))
        for gpu_key, counts in gpus:
            for name, count in sorted(counts.items()):
                slots[(k, name)] += [gpu_key] * count
        for profile in model.base_profiles:
            by_memory[(k, profile.memory_mib)].append(profile.name)
    taken: dict[tuple[int, str], int] = defaultdict(int)
    # Pinned replicas first: the others may take any slice of the memory they were given.
    for members, k, (how, what), count in sorted(routes, key=lambda r: r[2][0] == "mem"):
        for name in ([what] if how == "pin" else by_memory[(k, what)]):
            first = taken[(k, name)]
            for gpu_key in slots[(k, name)][first:first + count]:
                assignment[gpu_key].append((name, next(members)))
            got = len(slots[(k, name)][first:first + count])
            taken[(k, name)] = first + got
            count -= got
    for pool in pools:
        for gpu in pool.declared + pool.auto:
            if assignment.get((gpu.node, gpu.index)):
                assignment[(gpu.node, gpu.index)] = _canonical_profiles(gpu, assignment[(gpu.node, gpu.index)])


def _canonical_profiles(gpu: MigCandidate, assigned):
    """The same replicas on a GPU get the same profiles, whichever pattern the solver chose.

    A replica that is not pinned only needs memory, and the solver only counts slices by
    memory, so 1g.35gb or 2g.35gb (3g.71gb or 4g.71gb) is its pattern's accident; that
    accident differed between the day and night states of one inventory and re-cut an
    unchanged GPU. Here each gets, per memory, the allowed profile with the fewest compute
    slices (the compute left over goes to the carved rest). That one places wherever the
    solver's did: on every catalogue model it has the same size, every start of the others
    and room for as many (tests/unit/.../hardware/test_gpu_catalog.py checks it).
    Pinned replicas come first, then the others by memory, each in the order given.
    """
    model = CATALOG[gpu.model]
    allowed = _allowed(gpu)
    out = [(name, d) for name, d in assigned if d.profile]
    free = sorted(((model.profile(name).memory_mib, d) for name, d in assigned if not d.profile), key=lambda md: md[0])
    for memory, d in free:
        out.append((fewest_compute(model, memory, allowed).name, d))
    return out


def _profile_counts(assigned) -> dict[str, int]:
    return dict(Counter(name for name, _d in assigned))


def _layout(c: MigCandidate, counts: dict[str, int], assigned) -> MigLayout:
    model = CATALOG[c.model]
    placement = mig_geometry.place(model, counts)
    if placement is None:   # only a fixed layout from the inventory can get here
        raise MigShortfall("%s GPU %d: the MIG layout %s has no valid placement on %s"
                           % (c.node, c.index, counts, model.key))
    pending = defaultdict(list)
    for name, demand in sorted(assigned, key=lambda a: (a[1].workload, a[1].replica)):
        pending[name].append(demand)
    layout = MigLayout(c.node, c.index, c.model)
    for name, start in placement:
        profile = model.profile(name)
        demand = pending[name].pop(0) if pending[name] else None
        layout.slices.append(MigSlice(
            profile=name, start=start, size=profile.size, memory_mib=profile.memory_mib,
            team=demand.team if demand else c.team, workload=demand.workload if demand else None,
            replica=demand.replica if demand else None))
    return layout


# ----------------------------------------------------------------------------- stable re-planning

def _normal_counts(counts) -> dict[str, int] | None:
    """Profile counts as MigLayout.counts() gives them, from (profile, count) pairs; None stays None."""
    if counts is None:
        return None
    out: dict[str, int] = Counter()
    for name, n in counts:
        out[name] += n
    return {name: n for name, n in sorted(out.items()) if n}


def _keepable(c: MigCandidate, counts: dict[str, int] | None) -> bool:
    """Whether GPU ``c`` may keep its current layout: no fixed layout, only profiles of its
    model that it may still use, and a valid placement."""
    if c.layout is not None or counts is None:
        return False
    model = CATALOG[c.model]
    names = {p.name for p in model.mig_profiles}
    return all(name in names and name not in c.forbidden for name in counts) and mig_geometry.feasible(model, counts)


def _valid_slices(model, slices) -> bool:
    used = 0
    media = 0
    for name, start in slices:
        try:
            profile = model.profile(name)
        except KeyError:
            return False
        if profile.name != name or start not in profile.starts or start + profile.size > model.mig_grid:
            return False
        mask = ((1 << profile.size) - 1) << start
        if used & mask:
            return False
        used |= mask
        media += profile.media_extensions
    counts = Counter(name for name, _start in slices)
    return media <= 1 and all(n <= model.profile(name).max_count for name, n in counts.items())


def _slices_now(c: MigCandidate, counts: dict[str, int]) -> list[tuple[str, int]] | None:
    """(profile, start) of the slices GPU ``c`` has now: ``current_slices`` when they are a
    valid placement of exactly ``counts``, else the placement mig_geometry gives."""
    model = CATALOG[c.model]
    given = sorted(((s[0], s[1]) for s in c.current_slices), key=lambda s: (s[1], s[0]))
    if given and Counter(name for name, _start in given) == Counter(counts) and _valid_slices(model, given):
        return given
    return mig_geometry.place(model, counts)


@dataclass
class _Group:
    """GPUs of one pool with the same current counts (None: not MIG now) and declared mode."""
    pool: int
    declared: bool
    current: dict[str, int] | None
    gpus: list[MigCandidate]
    keepable: bool
    per_gpu: list[int] = field(default_factory=list)     # replicas that may stay, per GPU of ``gpus``
    stayable: dict = field(default_factory=dict)         # (class, kind) -> replicas that may stay


class _Stable:
    """The current state of the candidates, grouped for the programme (see _Programme)."""

    def __init__(self, candidates: list[MigCandidate], pools: list[_Pool]):
        self.by_key = {(c.node, c.index): c for c in candidates}
        self.counts = {key: _normal_counts(c.current) for key, c in self.by_key.items()}
        self.pool_of: dict[tuple[str, int], int] = {}
        self.groups: list[_Group] = []
        self.fixed_groups: list[_Group] = []
        self.slices: dict[tuple[str, int], list[tuple[str, int]]] = {}   # GPUs that may keep their slices
        self.fixed_changed = 0
        for k, pool in enumerate(pools):
            keyed: dict[tuple, _Group] = {}
            for gpu in pool.declared + pool.auto:
                key = (gpu.node, gpu.index)
                self.pool_of[key] = k
                counts = self.counts[key]
                group_key = (gpu.declared, None if counts is None else tuple(counts.items()))
                if group_key not in keyed:
                    keyed[group_key] = _Group(k, gpu.declared, counts, [], _keepable(gpu, counts))
                keyed[group_key].gpus.append(gpu)
                if keyed[group_key].keepable:
                    self.slices[key] = _slices_now(gpu, counts)
            for group_key in sorted(keyed, key=lambda g: (not g[0], g[1] is None, g[1] or ())):
                self.groups.append(keyed[group_key])
            unchanged = []
            for gpu in pool.fixed:
                key = (gpu.node, gpu.index)
                self.pool_of[key] = k
                if self.counts[key] == _normal_counts(gpu.layout):
                    unchanged.append(gpu)
                    self.slices[key] = _slices_now(gpu, self.counts[key])
                else:
                    self.fixed_changed += 1
            if unchanged:
                self.fixed_groups.append(_Group(k, True, None, unchanged, False))
        # Where each replica is now, on GPUs whose slices may stay (first found, by GPU).
        self.where: dict[tuple[str, int | None], tuple[tuple[str, int], str, int]] = {}
        for key, c in sorted(self.by_key.items()):
            here = set(self.slices.get(key) or ())
            for name, start, workload, replica in c.current_slices:
                if workload is not None and (name, start) in here:
                    self.where.setdefault((workload, replica), (key, name, start))
        self.stay_kind: dict = {}
        self.demand = {}

    def attach(self, classes) -> None:
        """Which replicas may stay where they are: on a slice that the replica's class fits."""
        fits = [set(pairs) for (pairs, _pin), _members in classes]
        for c, (_key, members) in enumerate(classes):
            for d in members:
                self.demand.setdefault((d.workload, d.replica), (c, d))
        for wr, (key, name, _start) in self.where.items():
            if wr not in self.demand:
                continue
            c, _d = self.demand[wr]
            model_key = self.by_key[key].model
            pin = classes[c][0][1]
            if (model_key, name) in fits[c] and (not pin or pin == name):
                self.stay_kind[wr] = (c, ("pin", name) if pin else ("mem", CATALOG[model_key].profile(name).memory_mib))
        on_gpu: dict[tuple[str, int], list] = defaultdict(list)
        for wr, ck in self.stay_kind.items():
            on_gpu[self.where[wr][0]].append(ck)
        for group in self.groups + self.fixed_groups:
            group.per_gpu = [len(on_gpu[(gpu.node, gpu.index)]) for gpu in group.gpus]
            group.stayable = Counter(ck for gpu in group.gpus for ck in on_gpu[(gpu.node, gpu.index)])


def _plan_stable(demands, candidates, carve_leftover, time_limit, solve: MigSolve):
    pools = _pools(candidates)
    stable = _Stable(candidates, pools)
    solve.stable = solve.stays = None
    if demands:
        patterns, routes, keeps, classes = _solve(demands, pools, time_limit, solve, stable)
    else:
        # Nothing to host: every GPU that may keep its layout keeps it (not a drain).
        stable.attach([])
        patterns, routes, classes = [], [], []
        keeps = {g: (0, len(group.gpus) if group.keepable else 0, 0) for g, group in enumerate(stable.groups)}
    layouts = _realise_stable(pools, stable, classes, patterns, routes, keeps, carve_leftover)
    if solve.stable is None:
        solve.stable = {"objective": "gpus_repartitioned", "status": "optimal", "value": _changed(layouts, candidates),
                        "seconds": 0.0}
    return layouts


def _realise_stable(pools, stable: _Stable, classes, chosen_patterns, routes, keeps, carve_leftover):
    """Give the kept layouts and the patterns to concrete GPUs, then replicas to slices:
    first those that stay where they are, then the others."""
    concrete: dict[tuple[str, int], list[tuple[str, int]]] = {}    # fixed and kept GPUs: their slices
    offered: dict[tuple[str, int], bool] = {}                      # ... and whether replicas may use them
    cut: dict[tuple[str, int], dict[str, int]] = {}                # re-cut GPUs: their pattern
    left: list[MigCandidate] = []                                  # declared GPUs neither kept nor re-cut
    slots: dict[tuple[int, str], list[tuple[tuple[str, int], int | None]]] = defaultdict(list)
    by_memory: dict[tuple[int, int], list[str]] = defaultdict(list)
    groups_of = defaultdict(list)
    for g, group in enumerate(stable.groups):
        groups_of[group.pool].append(g)
    for k, pool in enumerate(pools):
        model = CATALOG[pool.model]
        for gpu in pool.fixed:
            key = (gpu.node, gpu.index)
            slices = stable.slices.get(key) or mig_geometry.place(model, dict(gpu.layout))
            if slices is None:
                raise MigShortfall("%s GPU %d: the MIG layout %s has no valid placement on %s"
                                   % (gpu.node, gpu.index, dict(gpu.layout), model.key))
            concrete[key], offered[key] = slices, True
        recut: list[MigCandidate] = []
        for g in groups_of[k]:
            group = stable.groups[g]
            used, idle, again = keeps[g]
            # The GPUs with the most replicas that may stay are kept (and host replicas) first.
            order = sorted(range(len(group.gpus)), key=lambda j: -group.per_gpu[j])
            for n, j in enumerate(order[:used + idle]):
                key = (group.gpus[j].node, group.gpus[j].index)
                concrete[key], offered[key] = stable.slices[key], n < used
            rest = [group.gpus[j] for j in sorted(order[used + idle:])]
            recut += rest[:again]
            left += [gpu for gpu in rest[again:] if gpu.declared]
        rank = {(gpu.node, gpu.index): n for n, gpu in enumerate(pool.declared + pool.auto)}
        recut.sort(key=lambda gpu: rank[(gpu.node, gpu.index)])
        # Fullest patterns on the first GPUs, as in _realise.
        mine = sorted(((pattern, count) for kk, pattern, count in chosen_patterns if kk == k),
                      key=lambda pc: -sum(model.profile(n).size * c for n, c in pc[0].items()))
        patterns = [pattern for pattern, count in mine for _copy in range(count)]
        if len(patterns) > len(recut):
            raise MigShortfall("the MIG programme could not be realised: %d patterns for %d GPUs re-cut"
                               % (len(patterns), len(recut)))
        for gpu, pattern in zip(recut, patterns):
            cut[(gpu.node, gpu.index)] = dict(pattern)
        left += [gpu for gpu in recut[len(patterns):] if gpu.declared]
        # Slices to fill, in order: fixed layouts, kept layouts, re-cut GPUs.
        kept = sorted((key for key in concrete if stable.pool_of[key] == k and stable.by_key[key].layout is None),
                      key=lambda key: rank[key])
        for key in [(gpu.node, gpu.index) for gpu in pool.fixed] + kept:
            if offered[key]:
                for name, start in concrete[key]:
                    slots[(k, name)].append((key, start))
        for gpu in recut[:len(patterns)]:
            key = (gpu.node, gpu.index)
            for name, count in sorted(cut[key].items()):
                slots[(k, name)] += [(key, None)] * count
        for profile in model.base_profiles:
            by_memory[(k, profile.memory_mib)].append(profile.name)

    placed: dict[tuple[str, int], dict[int, MigDemand]] = defaultdict(dict)   # fixed and kept GPUs
    assignment: dict[tuple[str, int], list[tuple[str, MigDemand]]] = defaultdict(list)   # re-cut GPUs
    taken: set = set()
    stayed: set = set()
    free = Counter({slot: len(where) for slot, where in slots.items()})
    routes = sorted(routes, key=lambda r: r[2][0] == "mem")      # pinned replicas first
    left_count = [count for _c, _k, _kind, count in routes]
    pinned_left = Counter()
    for _c, k, (how, what), count in routes:
        if how == "pin":
            pinned_left[(k, what)] += count
    may_stay = defaultdict(list)
    for wr, (key, name, start) in stable.where.items():
        if wr in stable.stay_kind and offered.get(key):
            c, kind = stable.stay_kind[wr]
            may_stay[(c, stable.pool_of[key], kind)].append((wr, key, name, start))
    # Replicas stay on their slices, as many as the routes allow; one that is not pinned
    # leaves a slice to the pinned replicas that need that profile.
    for r, (c, k, kind, _count) in enumerate(routes):
        for wr, key, name, start in may_stay[(c, k, kind)]:
            if not left_count[r]:
                break
            if kind[0] == "mem" and free[(k, name)] - 1 < pinned_left[(k, name)]:
                continue
            placed[key][start] = stable.demand[wr][1]
            taken.add((key, start))
            stayed.add(wr)
            free[(k, name)] -= 1
            left_count[r] -= 1
            if kind[0] == "pin":
                pinned_left[(k, name)] -= 1
    queues = [iter([d for d in members if (d.workload, d.replica) not in stayed]) for _key, members in classes]
    position: dict[tuple[int, str], int] = defaultdict(int)
    for r, (c, k, (how, what), _count) in enumerate(routes):
        for name in ([what] if how == "pin" else by_memory[(k, what)]):
            where = slots[(k, name)]
            while left_count[r] and position[(k, name)] < len(where):
                key, start = where[position[(k, name)]]
                position[(k, name)] += 1
                if start is None:
                    assignment[key].append((name, next(queues[c])))
                elif (key, start) not in taken:
                    placed[key][start] = next(queues[c])
                else:
                    continue
                left_count[r] -= 1
        if left_count[r]:
            raise MigShortfall("the MIG programme could not be realised: %d replica(s) without a slice" % left_count[r])

    layouts = {}
    for key, slices in concrete.items():
        layouts[key] = _layout_at(stable.by_key[key], slices, placed[key])
    for key in cut:
        c = stable.by_key[key]
        mine = _canonical_profiles(c, assignment[key])
        used = _profile_counts(mine)
        if carve_leftover:
            used = mig_geometry.carve(CATALOG[c.model], used, _allowed(c))
        layouts[key] = _layout(c, used, mine)
    for c in left:
        used = mig_geometry.carve(CATALOG[c.model], {}, _allowed(c)) if carve_leftover else {}
        layouts[(c.node, c.index)] = _layout(c, used, [])
    return dict(sorted(layouts.items()))


def _layout_at(c: MigCandidate, slices: list[tuple[str, int]], placed: dict[int, MigDemand]) -> MigLayout:
    """The layout of a GPU whose slices are where they are; ``placed``: start -> replica."""
    model = CATALOG[c.model]
    layout = MigLayout(c.node, c.index, c.model)
    for name, start in sorted(slices, key=lambda s: s[1]):
        profile = model.profile(name)
        demand = placed.get(start)
        layout.slices.append(MigSlice(
            profile=name, start=start, size=profile.size, memory_mib=profile.memory_mib,
            team=demand.team if demand else c.team, workload=demand.workload if demand else None,
            replica=demand.replica if demand else None))
    return layout


def _changed(layouts, candidates) -> int:
    """GPUs whose profile counts differ from their current ones (not MIG: None)."""
    return sum(1 for c in candidates
               if (layouts[(c.node, c.index)].counts() if (c.node, c.index) in layouts else None)
               != _normal_counts(c.current))


def _measure_changes(layouts, candidates, solve: MigSolve) -> None:
    """GPUs re-partitioned and replicas moved, against the candidates' current state."""
    solve.repartitioned = _changed(layouts, candidates)
    before = {}
    for c in sorted(candidates, key=lambda c: (c.node, c.index)):
        for name, start, workload, replica in c.current_slices:
            if workload is not None:
                before.setdefault((workload, replica), ((c.node, c.index), name, start))
    solve.moved = sum(1 for key, layout in layouts.items() for s in layout.slices
                      if s.workload is not None and (s.workload, s.replica) in before
                      and before[(s.workload, s.replica)] != (key, s.profile, s.start))
