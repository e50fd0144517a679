# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choose MIG layouts: which profiles each MIG GPU is cut into and which slice each
service replica gets.

The choice is an integer programme over *patterns* (every placement-feasible multiset of
profiles on one GPU of a model, see mig_geometry), solved exactly with HiGHS through
scipy. Objectives, in strict order, each solved to optimality before the next:

1. convert the fewest ``auto`` GPUs to MIG (GPUs declared ``mig`` are MIG anyway);
2. host the services on the fewest GPUs;
3. waste the least memory (sum of slice memory minus what each replica needs).

Replicas with the same need and the same allowed models are one class, so the programme
stays small for a fleet of thousands of GPUs. Leftover capacity on each GPU is then
carved into the largest profiles that still fit, or left unpartitioned (policy).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ansible_collections.gpushare.cluster.plugins.module_utils import mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.gpu_catalog import CATALOG


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


class MigShortfall(Exception):
    """The services cannot be fitted; the message says by how much and what would fit."""


def plan_mig(demands: list[MigDemand], candidates: list[MigCandidate], carve_leftover: bool = True,
             time_limit: float = 20.0) -> dict[tuple[str, int], MigLayout]:
    """Layouts for every GPU that ends up in MIG mode, keyed by (node, index)."""
    pools = _pools(candidates)
    # Declared MIG GPUs stay MIG even when no service needs them; auto ones only when used.
    chosen: dict[tuple[str, int], dict[str, int]] = {
        (c.node, c.index): dict(c.layout or ()) for c in candidates if c.declared or c.layout is not None}
    assignment: dict[tuple[str, int], list[tuple[str, MigDemand]]] = defaultdict(list)
    if demands:
        patterns, routes = _solve(demands, pools, time_limit)
        _realise(patterns, routes, pools, chosen, assignment)
    layouts = {}
    by_key = {(c.node, c.index): c for c in candidates}
    for key, profile_counts in sorted(chosen.items()):
        c = by_key[key]
        model = CATALOG[c.model]
        used = _used_counts(profile_counts, assignment[key], c.layout is not None)
        if carve_leftover and c.layout is None:
            used = mig_geometry.carve(model, used, _allowed(c))
        layouts[key] = _layout(c, used, assignment[key])
    return layouts


def _allowed(c: MigCandidate, extra: tuple[str, ...] = ()) -> list[str]:
    model = CATALOG[c.model]
    names = {p.name for p in model.base_profiles} | set(extra)
    return sorted(names - set(c.forbidden))


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


def _classes(demands: list[MigDemand]):
    classes: dict[tuple, list[MigDemand]] = defaultdict(list)
    for d in demands:
        classes[(d.need_mib, d.models, d.profile)].append(d)
    return sorted(classes.items(), key=lambda kv: (-kv[0][0], kv[0][1], kv[0][2] or ""))


def _solve(demands: list[MigDemand], pools: list[_Pool], time_limit: float):
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    classes = _classes(demands)
    pinned = tuple(sorted({d.profile for d in demands if d.profile}))
    # Columns: x[pool, pattern] GPUs cut that way | a[pool] auto GPUs converted |
    #          z[class, pool, profile] replicas of a class on slices of a profile.
    x_cols, z_cols, pool_patterns = [], [], []
    for k, pool in enumerate(pools):
        model = CATALOG[pool.model]
        pins = tuple(p for p in pinned if p in {q.name for q in model.mig_profiles})
        names = _allowed(MigCandidate("", 0, pool.model, True, forbidden=pool.forbidden), pins)
        patterns = mig_geometry.patterns(pool.model, tuple(names)) if (pool.declared or pool.auto) else ()
        pool_patterns.append((names, patterns))
        x_cols += [(k, dict(pattern)) for pattern in patterns]
    a_base = len(x_cols)
    z_base = a_base + len(pools)
    for c, ((need, models, pin), _members) in enumerate(classes):
        for k, pool in enumerate(pools):
            if pool.model not in models:
                continue
            model = CATALOG[pool.model]
            for name in sorted(set(pool_patterns[k][0]) | set(pool.fixed_supply)):
                profile = model.profile(name)
                if (name == pin if pin else not profile.variant) and profile.memory_mib >= need:
                    z_cols.append((c, k, name, profile.memory_mib - need))
    n = z_base + len(z_cols)

    entries, lo, hi = [], [], []     # (row, column, value) of the constraint matrix

    def constraint(terms, low, high):
        row = len(lo)
        entries.extend((row, col, val) for col, val in terms)
        lo.append(low)
        hi.append(high)

    for k, pool in enumerate(pools):
        mine = [j for j, (kk, _p) in enumerate(x_cols) if kk == k]
        constraint([(j, 1) for j in mine], 0, len(pool.declared) + len(pool.auto))
        # a_k >= GPUs cut beyond the declared ones
        constraint([(j, -1) for j in mine] + [(a_base + k, 1)], -len(pool.declared), np.inf)
    for c, (_key, members) in enumerate(classes):
        constraint([(z_base + j, 1) for j, z in enumerate(z_cols) if z[0] == c], len(members), len(members))
    routes_by_slot = defaultdict(list)
    for j, (_c, k, q, _w) in enumerate(z_cols):
        routes_by_slot[(k, q)].append(z_base + j)
    for (k, q), cols in sorted(routes_by_slot.items()):
        # replicas on profile q <= slices of q in the chosen patterns + fixed layouts
        supply = [(j, -pattern[q]) for j, (kk, pattern) in enumerate(x_cols) if kk == k and pattern.get(q)]
        constraint([(col, 1) for col in cols] + supply, -np.inf, pools[k].fixed_supply.get(q, 0))

    rows, cols, vals = zip(*entries)
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), n)).tocsr()
    fewest_auto, fewest_gpus, least_waste = np.zeros(n), np.zeros(n), np.zeros(n)
    fewest_auto[a_base:z_base] = 1
    fewest_gpus[:a_base] = 1
    for j, (_c, _k, _q, waste) in enumerate(z_cols):
        least_waste[z_base + j] = waste
    constraints = [LinearConstraint(matrix, lo, hi)]
    result = None
    for objective in (fewest_auto, fewest_gpus, least_waste):
        result = milp(objective, constraints=constraints, integrality=np.ones(n),
                      bounds=Bounds(np.zeros(n), np.full(n, np.inf)), options={"time_limit": time_limit})
        if result.x is None:
            raise MigShortfall(_explain_shortfall(classes, pools, pool_patterns))
        # Keep this objective at its optimum while the next one is minimised.
        best = float(objective @ np.round(result.x))
        constraints.append(LinearConstraint(objective.reshape(1, -1), -np.inf, best + 1e-6))
    values = np.round(result.x).astype(int)
    chosen = [(k, pattern, int(values[j])) for j, (k, pattern) in enumerate(x_cols) if values[j]]
    # Each class's replicas are handed out in order along its routes (copies: popped later).
    queues = [list(members) for _key, members in classes]
    routes = [(queues[c], k, q, int(values[z_base + j])) for j, (c, k, q, _w) in enumerate(z_cols)
              if values[z_base + j]]
    return chosen, routes


def _explain_shortfall(classes, pools, pool_patterns) -> str:
    lines = ["the MIG services do not fit on the GPUs that may be cut with MIG:"]
    for (need, models, pin), members in classes:
        names = sorted({d.workload for d in members})
        shown = ", ".join(names[:4]) + (" and %d more" % (len(names) - 4) if len(names) > 4 else "")
        lines.append("  - %d replica(s) of %s need %s on %s" % (
            len(members), shown, pin or "a slice with at least %d MiB" % need, ", ".join(models)))
    for k, pool in enumerate(pools):
        model = CATALOG[pool.model]
        count = len(pool.declared) + len(pool.auto)
        biggest = max((model.profile(n).memory_mib for n in pool_patterns[k][0]), default=0)
        per_gpu = {}
        for pattern in pool_patterns[k][1]:
            for name, c in pattern:
                per_gpu[name] = max(per_gpu.get(name, 0), c)
        lines.append("  - %s: %d GPU(s) free for MIG (+ fixed layouts %s); largest slice %d MiB; per GPU at most %s"
                     % (model.key, count, dict(pool.fixed_supply) or "none", biggest,
                        ", ".join("%d x %s" % (v, n) for n, v in sorted(per_gpu.items()))))
    lines.append("  Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model).")
    return "\n".join(lines)


def _realise(chosen_patterns, routes, pools, chosen, assignment) -> None:
    """Give patterns to concrete GPUs, then replicas to concrete slices."""
    free: dict[int, list[tuple[tuple[str, int], dict[str, int]]]] = {}
    for k, pool in enumerate(pools):
        patterns = [pattern for kk, pattern, count in chosen_patterns if kk == k for _copy in range(count)]
        # Fullest patterns on the first GPUs, so the GPUs left over stay whole.
        model = CATALOG[pool.model]
        patterns.sort(key=lambda pat: -sum(model.profile(n).size * c for n, c in pat.items()))
        # Slices the inventory fixed are filled first: they exist whatever the plan.
        free[k] = [((gpu.node, gpu.index), dict(gpu.layout)) for gpu in pool.fixed]
        for gpu, pattern in zip(pool.declared + pool.auto, patterns):
            chosen[(gpu.node, gpu.index)] = dict(pattern)
            free[k].append(((gpu.node, gpu.index), dict(pattern)))
    for members, k, q, count in routes:
        for gpu_key, slots in free[k]:
            while slots.get(q, 0) and count:
                slots[q] -= 1
                count -= 1
                assignment[gpu_key].append((q, members.pop(0)))


def _used_counts(pattern: dict[str, int], assigned, fixed: bool) -> dict[str, int]:
    if fixed:
        return dict(pattern)
    used: dict[str, int] = defaultdict(int)
    for name, _d in assigned:
        used[name] += 1
    return dict(used)


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
