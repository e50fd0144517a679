# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From the per-service choices to a proposal ``plan.yml`` accepts: team quotas from
concurrent use, the advised demand placed on the current servers (``gpushare_workloads``
and each ``gpushare_node``), a sharing window from idle hours, and what to buy."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog, mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model as inv_model
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import AUTO, DRA, MIG, MPS, SHARED_MODES, TIMESLICE, WHOLE
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.features import _Context
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.rules import (
    MAX_SHARED_REPLICAS, MIN_SHARED_REPLICAS, choose_profile)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import _np

HOURS_PER_DAY = 24
NIGHT_HOUR = 3                 # a window covering 03:00 is called "night", any other "idle"


# --------------------------------------------------------------------------- teams


def team_quotas(ctx: _Context, services: dict, sl: slice) -> list[dict]:
    """Per team: GPUs in use at once (whole GPUs, MIG slices as their share of the grid, a
    time-sliced GPU once), its percentile, its peak, and the idle hours of the day."""
    np = _np()
    s = ctx.settings
    out = []
    owned = Counter(g.team for n in ctx.inventory.nodes for g in n.gpus if g.team)
    for team in ctx.inventory.teams:
        in_use = _team_in_use(ctx, services, sl, team.name)
        quota = float(np.percentile(in_use, s.quota_percentile)) if in_use.size else 0.0
        hours = ctx.hours[sl]
        idle_hours = [h for h in range(HOURS_PER_DAY) if in_use[hours == h].size and
                      float(np.percentile(in_use[hours == h], s.idle_hour_percentile)) <= 1e-9]
        out.append({"team": team.name, "gpus_in_use_p": round(quota, 2), "percentile": s.quota_percentile,
                    "gpus_in_use_max": round(float(in_use.max()) if in_use.size else 0.0, 2),
                    "gpus_in_use_mean": round(float(in_use.mean()) if in_use.size else 0.0, 2),
                    "quota_proposed": int(math.ceil(quota - 1e-9)), "gpus_owned_now": owned.get(team.name, 0),
                    "idle_hours": idle_hours})
    return out


def _team_in_use(ctx: _Context, services: dict, sl: slice, team: str):
    """GPUs the team's services use at each step of ``sl``, each device counted once at its
    share of the placement grid."""
    np = _np()
    devices = {}
    for (ns, _name), svc in services.items():
        if ctx.team_of_ns.get(ns) == team:
            for key, d in svc.devices.items():
                up = ~(np.isnan(d.mem[sl]) & np.isnan(d.act[sl]))
                devices[key] = (devices[key] | up) if key in devices else up
                devices[key + ("frac",)] = d.unit_fraction
    in_use = np.zeros(len(range(*sl.indices(ctx.usage.steps))))
    for key, up in devices.items():
        if key[-1] != "frac":
            in_use = in_use + up * devices[key + ("frac",)]
    return in_use


def idle_hours(ctx: _Context, f: dict, sl: slice) -> list[int]:
    """Hours of the day (policy time zone) in which the service is idle on every day: the
    ``idle_hour_percentile`` of its activity at that hour is below the idle threshold (an
    hour without samples is idle too)."""
    np = _np()
    s = ctx.settings
    hours = ctx.hours[sl]
    act = np.where(f["present"], f["act_rel"], 0.0)
    act = np.nan_to_num(act)
    return [h for h in range(HOURS_PER_DAY) if not (hours == h).any()
            or float(np.percentile(act[hours == h], s.idle_hour_percentile)) < s.idle_activity]


# --------------------------------------------------------------------------- workloads


def _workload_entry(r: dict) -> dict:
    """A gpushare_workloads entry for an advised service."""
    w = {"name": r["name"], "team": r["team"], "kind": r["kind"], "sharing": r["sharing"]}
    if r["sharing"] == DRA:
        w["device_request"] = {"min_memory_gib": r["memory_gib"]}
        w.pop("sharing")
    elif r["sharing"] == TIMESLICE:
        pass
    else:
        w["memory_gib"] = r["memory_gib"]
    if r["sharing"] == MIG:
        w["mig_profile"] = r["mig_profile"]
    if r["replicas"] != 1:
        w["replicas"] = r["replicas"]
    if r["sharing"] == WHOLE and r["gpus"] != 1:
        w["gpus"] = r["gpus"]
    return w


def _raw_workload(w) -> dict:
    """The inventory entry of a current workload, as it would be written."""
    out = {"name": w.name, "team": w.team, "kind": w.kind}
    if w.sharing == DRA:
        out["device_request"] = {"min_memory_gib": w.min_memory_gib}
    else:
        out["sharing"] = w.sharing
    if w.memory_gib:
        out["memory_gib"] = w.memory_gib
    for key, value, default in (("replicas", w.replicas, 1), ("gpus", w.gpus, 1)):
        if value != default:
            out[key] = value
    if w.gpu_model:
        out["gpu_model"] = w.gpu_model
    if w.mig_profile:
        out["mig_profile"] = w.mig_profile
    return out


def _workloads(inv, results: list[dict]) -> tuple[list[dict], list[dict]]:
    """The proposed gpushare_workloads (advised entries, current ones where not advised) in
    the inventory's order, and the advised results."""
    current = {w.name: w for w in inv.workloads}
    multi_model = len({n.model for n in inv.nodes}) > 1
    workloads, advised = [], []
    for r in results:
        if r.get("status") == "ok":
            w = _workload_entry(r)
            if multi_model and r["sharing"] == MIG and r.get("model"):
                w["gpu_model"] = r["model"]
            workloads.append(w)
            advised.append(r)
        elif r["name"] in current:
            workloads.append(_raw_workload(current[r["name"]]))
    order = {w.name: i for i, w in enumerate(inv.workloads)}
    workloads.sort(key=lambda w: (order.get(w["name"], len(order)), w["name"]))
    return workloads, advised


# --------------------------------------------------------------------------- placing


def _first_fit(card: gpu_catalog.GpuModel, profiles: list) -> tuple[list[int], int]:
    """MIG profiles packed onto cards in the given order, each on the first card it fits
    (the catalogue's placement rules): the card index of each profile, and the cards used."""
    bins: list[Counter] = []
    where = []
    for p in profiles:
        for i, b in enumerate(bins):
            if mig_geometry.feasible(card, dict(b + Counter({p.name: 1}))):
                b[p.name] += 1
                where.append(i)
                break
        else:
            bins.append(Counter({p.name: 1}))
            where.append(len(bins) - 1)
    return where, len(bins)


class _Placement:
    """The current servers' GPUs (DRA servers apart) given out one demand after the other:
    each preferably on GPUs its services used before, then of its team."""

    def __init__(self, ctx: _Context, services: dict):
        self.ctx = ctx
        self.used_by = defaultdict(set)        # (node, gpu) -> services seen on it
        for (_ns, name), svc in services.items():
            for d in svc.devices.values():
                self.used_by[(d.key[0], d.key[1])].add(name)
        self.free = {(n.name, g.index): g for n in ctx.inventory.nodes if not n.dra for g in n.gpus}
        self.assigned: dict[tuple, dict] = {}
        self.unplaced: list[str] = []
        self.services = services
        self.borrowed: dict[tuple, object] = {}    # GPUs a kept service used only in their windows -> the GPU now

    def take(self, model: str | None, count: int, service_names: set, team: str) -> list[tuple]:
        cands = [k for k in self.free if (model is None or self.ctx.node_models[k[0]] == model)]
        cands.sort(key=lambda k: (not (self.used_by[k] & service_names), self.free[k].team != team, k))
        chosen = cands[:count]
        for k in chosen:
            self.free.pop(k)
        return chosen

    def whole_serving(self, advised: list[dict]) -> None:
        for r in [r for r in advised if r["sharing"] == WHOLE and r["kind"] == "serving"]:
            need = r["replicas"] * r["gpus"]
            got = self.take(r["model"], need, {r["name"]}, r["team"])
            for k in got:
                self.assigned[k] = {"mode": WHOLE, "team": r["team"]}
            if len(got) < need:
                self.unplaced.append("%s: %d whole %s GPUs short" % (r["name"], need - len(got), r["model"]))

    def mig(self, advised: list[dict]) -> None:
        """Per model, the MIG services' slices packed onto as few cards as the placement rules
        allow; each card to the team holding most of it."""
        groups = defaultdict(list)
        for r in advised:
            if r["sharing"] == MIG:
                groups[r["model"]].append(r)
        for model_key, group in groups.items():
            card = gpu_catalog.CATALOG[model_key]
            slices = sorted(((card.profile(r["mig_profile"]), r) for r in group for _replica in range(r["replicas"])),
                            key=lambda pr: -pr[0].size)
            where, count = _first_fit(card, [p for p, _r in slices])
            owners = [Counter() for _i in range(count)]
            for (profile, r), i in zip(slices, where):
                owners[i][r["team"]] += profile.size
            names = {r["name"] for r in group}
            for o in owners:
                team = o.most_common(1)[0][0]
                got = self.take(model_key, 1, names, team)
                if got:
                    self.assigned[got[0]] = {"mode": MIG, "team": team}
                else:
                    self.unplaced.append("MIG services %s: one %s GPU short" % (", ".join(sorted(names)), model_key))

    def mps(self, advised: list[dict]) -> None:
        """MPS services, per card model: the device plugin shares every GPU of a node by MPS with
        one replica count, so they take whole free nodes (those they ran on first), enough cards
        for each team's clients at the fewest clients per card any of them allows (every client's
        equal limit then holds its need)."""
        groups = defaultdict(list)
        for r in advised:
            if r["sharing"] == MPS:
                groups[r["model"]].append(r)
        for model_key, group in sorted(groups.items()):
            clients = min(r["gpu_replicas"] for r in group)
            by_team = Counter()
            for r in group:
                by_team[r["team"]] += r["replicas"]
            order = [team for team, n in sorted(by_team.items(), key=lambda kv: (-kv[1], kv[0]))
                     for _card in range(int(math.ceil(n / float(clients))))]
            names = {r["name"] for r in group}
            nodes = [n for n in self.ctx.inventory.nodes if not n.dra and n.model == model_key
                     and all((n.name, g.index) in self.free for g in n.gpus)]
            nodes.sort(key=lambda n: (not any(self.used_by[(n.name, g.index)] & names for g in n.gpus),
                                      any(g.team != order[0] for g in n.gpus), n.name))
            taken = []
            for n in nodes:
                if len(taken) >= len(order):
                    break
                taken += [(n.name, g.index) for g in n.gpus]
            for i, k in enumerate(taken):
                self.free.pop(k)
                # a node's GPUs beyond the clients' cards go to the team with most clients
                self.assigned[k] = {"mode": MPS, "team": order[i] if i < len(order) else order[0], "replicas": clients}
            if len(taken) < len(order):
                self.unplaced.append("%s: %d MPS %s GPUs short (MPS takes every GPU of a node)"
                                     % (", ".join(sorted(names)), len(order) - len(taken), model_key))

    def pools(self, advised: list[dict]) -> list[tuple]:
        """Time-sliced pools: (result, its GPUs) each. A pool whose service shared a device with
        an already placed pool joins that pool's GPUs when their memory holds both (as the
        usage had them), else takes GPUs of its own."""
        pools = []
        held = {}          # (node, gpu) -> [MiB held by its pools, sharers]
        by_name = {}
        for r in advised:
            if r["sharing"] != TIMESLICE:
                continue
            card = gpu_catalog.CATALOG.get(r.get("model"))
            need = r["replicas"] * r["memory_need_mib"]
            joined = []
            for other in r.get("shared_with") or ():
                for k in by_name.get(other, ()):
                    if card and k not in joined and held[k][0] + need <= card.memory_mib and \
                            held[k][1] + r["replicas"] <= MAX_SHARED_REPLICAS:
                        joined.append(k)
            if joined:
                k = joined[0]
                held[k] = [held[k][0] + need, held[k][1] + r["replicas"]]
                self.assigned[k]["replicas"] = max(self.assigned[k]["replicas"], held[k][1])
                by_name[r["name"]] = [k]
                pools.append((r, [k]))
                continue
            got = self.take(r["model"], r["pool_gpus"], {r["name"]}, r["team"])
            for k in got:
                self.assigned[k] = {"mode": TIMESLICE, "team": r["team"], "replicas": r["gpu_replicas"]}
                held[k] = [need / max(1, len(got)), r["gpu_replicas"]]
            by_name[r["name"]] = got
            pools.append((r, got))
            if len(got) < r["pool_gpus"]:
                self.unplaced.append("%s: %d time-sliced %s GPUs short"
                                     % (r["name"], r["pool_gpus"] - len(got), r["model"]))
        return pools

    def kept(self, results: list[dict], current: dict) -> None:
        """GPUs of services kept as they are (not enough data, unstable, pods that match no
        workload) keep their current mode; a kept workload seen on no GPU keeps the GPUs of its
        team in the mode it is shared by, as many as its replicas need."""
        used = {n for names in self.used_by.values() for n in names}
        for r in results:
            if r.get("status") == "ok":
                continue
            for k in list(self.free):
                if r["name"] in self.used_by[k]:
                    if self._only_in_windows(k, r["name"]):
                        # borrowed in the GPU's windows: the GPU is placed for its own services; its
                        # windows stay where nothing else proposes one (propose)
                        self.borrowed[k] = self.free[k]
                        continue
                    g = self.free.pop(k)
                    self.assigned[k] = _gpu_as_is(g)
            w = current.get(r["name"])
            if w is None or r["name"] in used or w.sharing not in SHARED_MODES + (MIG,):
                continue
            have = sum(a.get("replicas", 1) for k, a in self.assigned.items()
                       if a["mode"] == w.sharing and a["team"] == w.team)
            for k in sorted(self.free):
                g = self.free[k]
                if have >= w.replicas and w.sharing != MIG or w.sharing == MIG and have:
                    break
                if g.mode == w.sharing and g.team == w.team:
                    self.assigned[k] = _gpu_as_is(self.free.pop(k))
                    have += g.replicas or 1

    def _only_in_windows(self, k: tuple, name: str) -> bool:
        """Whether service ``name`` was on GPU ``k`` only in hours its current windows cover (it
        borrowed the GPU there, e.g. a training job lent a notebooks' GPU at night)."""
        g = self.free[k]
        if not g.windows:
            return False
        covered = set()
        for w in g.windows:
            start, end = int(w.start[:2]), int(w.end[:2]) + (1 if w.end[3:5] not in ("", "00") else 0)
            covered |= {(start + i) % HOURS_PER_DAY for i in range((end - start) % HOURS_PER_DAY or HOURS_PER_DAY)}
        np = _np()
        hours = set()
        for (_ns, svc_name), svc in self.services.items():
            for d in svc.devices.values():
                if svc_name == name and (d.key[0], d.key[1]) == k and getattr(d, "mem", None) is not None:
                    up = ~(np.isnan(d.mem) & np.isnan(d.act))
                    hours |= {int(h) for h in np.unique(self.ctx.hours[up])}
        return bool(hours) and hours <= covered

    def restore_borrowed_windows(self) -> None:
        """A GPU a kept service borrowed in its windows keeps those windows when it stays in the mode
        and with the team they were written for and nothing else gave it a window."""
        for k, g in self.borrowed.items():
            a = self.assigned.get(k)
            if a is not None and not a.get("schedule") and a["mode"] == g.mode and a.get("team") == g.team:
                a["schedule"] = _gpu_as_is(g)["schedule"]

    def batch(self, advised: list[dict], teams: list[dict]) -> None:
        """Training and batch: the rest, to their teams by their quota share."""
        batch_teams = Counter()
        for r in advised:
            if r["kind"] in ("training", "batch") and r["sharing"] == WHOLE:
                quota = next(t for t in teams if t["team"] == r["team"])
                batch_teams[r["team"]] = max(batch_teams[r["team"]], quota["quota_proposed"],
                                             r.get("run_gpus") or r["gpus"])
        for team, want in sorted(batch_teams.items(), key=lambda kv: -kv[1]):
            names = {r["name"] for r in advised if r["team"] == team}
            for k in self.take(None, want, names, team):
                self.assigned[k] = {"mode": WHOLE, "team": team}

    def spare(self) -> None:
        """Spare GPUs stay with their owner, whole."""
        for k, g in list(self.free.items()):
            self.assigned[k] = {"mode": WHOLE, "team": g.team} if g.mode != AUTO else {"mode": AUTO, "team": g.team}
            self.free.pop(k)


def propose(ctx: _Context, results: list[dict], teams: list[dict], services: dict, sl: slice) -> dict:
    """The proposal: workloads, nodes, what did not fit, windows and what to buy. On the
    current servers, whole serving first, then MIG, then the GPUs of services kept as they are,
    then MPS (whole nodes), then time-sliced pools; training/batch get what is left."""
    workloads, advised = _workloads(ctx.inventory, results)
    place = _Placement(ctx, services)
    place.whole_serving(advised)
    place.mig(advised)
    place.kept(results, {w.name: w for w in ctx.inventory.workloads})
    place.mps(advised)
    pools = place.pools(advised)
    place.batch(advised, teams)
    place.spare()
    # -- windows from idle hours of the time-sliced pools, when a queued team could borrow
    windows = _windows(ctx, pools, advised, _kept_runs(ctx, results))
    for w in windows:
        for node, index in w["gpus"]:
            place.assigned[(node, index)]["schedule"] = [{"name": w["name"], "from": w["from"], "until": w["until"],
                                                         "mode": WHOLE}]
    place.restore_borrowed_windows()
    nodes = _node_vars(ctx, place.assigned)
    return {"workloads": workloads, "nodes": nodes, "unplaced": place.unplaced, "windows": windows,
            "buy": _buy(ctx, advised, windows, place.unplaced)}


def _gpu_as_is(g) -> dict:
    out = {"mode": g.mode, "team": g.team}
    if g.replicas:
        out["replicas"] = g.replicas
    if g.mig_layout:
        out["mig_layout"] = dict(g.mig_layout)
    if g.windows:
        out["schedule"] = [{"name": w.name, "from": w.start, "until": w.end, "mode": w.mode} for w in g.windows]
    return out


def _node_vars(ctx: _Context, assigned: dict) -> dict:
    """host -> proposed gpushare_node (the current one with the GPUs replaced)."""
    out = {}
    for node in ctx.inventory.nodes:
        host, raw = ctx.raw_nodes[node.name]
        raw = dict(raw)
        gpus = []
        replicas = {}
        for g in node.gpus:
            a = assigned.get((node.name, g.index)) or _gpu_as_is(g)
            if a["mode"] in SHARED_MODES:
                replicas[a["mode"]] = max(replicas.get(a["mode"], MIN_SHARED_REPLICAS), a.get("replicas", MIN_SHARED_REPLICAS))
            gpus.append((g.index, a))
        raw["gpus"] = [e for e in (_gpu_entry(index, a, replicas) for index, a in gpus)
                       if not (e["mode"] == AUTO and len(e) == 2)]
        out[host] = raw
    return out


def _gpu_entry(index: int, a: dict, replicas: dict) -> dict:
    e = {"index": index, "mode": a["mode"]}
    if a.get("team"):
        e["team"] = a["team"]
    if a["mode"] in SHARED_MODES:
        e["replicas"] = replicas[a["mode"]]     # one replica count per node (device plugin)
    if a.get("mig_layout") and a["mode"] == MIG:
        e["mig_layout"] = a["mig_layout"]
    if a.get("schedule"):
        e["schedule"] = a["schedule"]
    return e


# --------------------------------------------------------------------------- windows


def _circular_runs(flags: list[bool]) -> list[tuple[int, int]]:
    """Runs of True in a circular list as (start, length), longest first."""
    n = len(flags)
    if all(flags):
        return [(0, n)]
    runs = []
    first_false = flags.index(False)
    i = first_false + 1
    while i < first_false + 1 + n:
        if flags[i % n]:
            j = i
            while flags[j % n] and j < i + n:
                j += 1
            runs.append((i % n, j - i))
            i = j
        else:
            i += 1
    return sorted(runs, key=lambda r: (-r[1], r[0]))


def _kept_runs(ctx: _Context, results: list[dict]) -> list[dict]:
    """Training and batch workloads kept as they are (not advised): they still borrow."""
    current = {w.name: w for w in ctx.inventory.workloads}
    kept = [current[r["name"]] for r in results if r.get("status") != "ok" and r["name"] in current]
    return [{"name": w.name, "team": w.team, "kind": w.kind} for w in kept
            if w.kind in ("training", "batch") and w.sharing == WHOLE]


def _windows(ctx: _Context, pools: list, advised: list[dict], kept: list[dict] = ()) -> list[dict]:
    """One daily window (one name, one set of hours: the planner plans a state per window)
    in which the time-sliced GPUs of teams that lend are idle and become whole GPUs, when a
    team that borrows runs training or batch work that could use them (advised, or kept as it is)."""
    s = ctx.settings
    team_by_name = {t.name: t for t in ctx.inventory.teams}
    borrowers = {r["team"] for r in list(advised) + list(kept)
                 if r["kind"] in ("training", "batch") and team_by_name[r["team"]].borrow}
    candidates = []
    for r, gpus in pools:
        if not gpus or not team_by_name[r["team"]].lend or not (borrowers - {r["team"]}):
            continue
        candidates.append((r, gpus, [h in r["idle_hours"] for h in range(HOURS_PER_DAY)]))
    if not candidates:
        return []
    together = [all(c[2][h] for c in candidates) for h in range(HOURS_PER_DAY)]
    runs = _circular_runs(together) if any(together) else []
    if not runs or runs[0][1] < s.min_window_hours or runs[0][1] == HOURS_PER_DAY:
        return []
    start, length = runs[0]
    until = (start + length) % HOURS_PER_DAY
    hours_set = {(start + k) % HOURS_PER_DAY for k in range(length)}
    name = "night" if NIGHT_HOUR in hours_set else "idle"
    return [{"name": name, "from": "%02d:00" % start, "until": "%02d:00" % until,
             "mode": WHOLE, "gpus": [list(g) for g in dict.fromkeys(g for c in candidates for g in c[1])],
             "teams": sorted({c[0]["team"] for c in candidates}), "for": sorted(borrowers),
             "why": "%s idle from %02d:00 to %02d:00 %s (%gth percentile of activity below %.0f %%) on every day "
                    "of the window; whole then, so %s can borrow it through Kueue"
                    % (", ".join(sorted({c[0]["name"] for c in candidates})), start, until,
                       ctx.inventory.policy.timezone, s.idle_hour_percentile, 100 * s.idle_activity,
                       " and ".join(sorted(borrowers)))}]


def windows_in(nodes: dict, advised: list[dict]) -> list[dict]:
    """The windows the proposed nodes hold (what the report states, so it never contradicts the
    proposal): each advised window with its reason, any other (kept from the current inventory)
    said so."""
    found = {}
    for host, node in sorted(nodes.items()):
        for g in node.get("gpus") or []:
            for w in g.get("schedule") or []:
                key = (w.get("name"), w.get("from"), w.get("until"), w.get("mode"))
                found.setdefault(key, []).append([inv_model.node_name(host), g.get("index")])
    out = []
    for (name, start, until, mode), gpus in found.items():
        match = next((a for a in advised if (a["name"], a["from"], a["until"], a["mode"]) == (name, start, until, mode)),
                     None)
        if match is not None:
            out.append(dict(match, gpus=gpus, proposed=True))
        else:
            out.append({"name": name, "from": start, "until": until, "mode": mode, "gpus": gpus, "proposed": False,
                        "why": "kept as the current inventory has it"})
    return out


# --------------------------------------------------------------------------- buying


def _cards_per_replica(r: dict, card: gpu_catalog.GpuModel) -> int:
    """Cards of ``card`` one replica needs: its memory (all its GPUs together) and its compute
    counted in GPUs of the model it ran on (not scaled between models)."""
    return max(1, int(math.ceil(r["memory_need_mib"] / card.memory_mib - 1e-9)),
               int(math.ceil(r["compute_need"] - 1e-9)))


def _cards_for(ctx: _Context, card: gpu_catalog.GpuModel, advised: list[dict], lent: int) -> int | None:
    """Cards of ``card`` for the advised demand, None when a replica needs more than
    ``buy_max_cards`` of them: serving whole or DRA by memory, MIG slices packed, time-sliced
    pools by memory, training and batch the largest run less the GPUs lent by windows."""
    cards = 0
    profiles = []
    for r in advised:
        need = r["memory_need_mib"]
        if r["sharing"] in (WHOLE, DRA) and r["kind"] == "serving" or r["sharing"] == DRA:
            cards += r["replicas"] * _cards_per_replica(r, card)
        elif r["sharing"] == MIG:
            p = choose_profile(card, need, r["compute_need"])
            if p is None or p.size == card.mig_grid:
                cards += r["replicas"] * max(1, int(math.ceil(need / card.memory_mib)))
            else:
                profiles += [p] * r["replicas"]
        elif r["sharing"] in SHARED_MODES:
            cards += max(1, int(math.ceil(r["replicas"] * need / card.memory_mib)))
    if profiles:
        cards += _first_fit(card, sorted(profiles, key=lambda p: -p.size))[1]
    batch = 0
    fits = True
    for r in advised:
        if r["kind"] in ("training", "batch") and r["sharing"] == WHOLE:
            per = _cards_per_replica(r, card)
            if per > ctx.settings.buy_max_cards:
                fits = False
            batch = max(batch, per * r["replicas"])
    cards += max(0, batch - lent) if batch else 0
    return cards if fits else None


def _buy(ctx: _Context, advised: list[dict], windows: list[dict], unplaced: list[str]) -> dict:
    """How many cards of each catalogue model would serve the advised demand (by memory and
    MIG geometry; compute is not scaled between models), with the cost when priced."""
    prices = dict(getattr(ctx.inventory.policy, "gpu_prices", ()) or ())
    lent = sum(len(w["gpus"]) for w in windows)
    rows = []
    for card in gpu_catalog.CATALOG.values():
        cards = _cards_for(ctx, card, advised, lent)
        if cards is None:
            continue
        row = {"model": card.key, "cards": cards}
        if card.key in prices:
            row["price"] = prices[card.key]
            row["cost"] = round(prices[card.key] * cards, 2)
        rows.append(row)
    owned = Counter()
    for node in ctx.inventory.nodes:
        owned[node.model] += len(node.gpus)
    for row in rows:
        row["owned"] = owned.get(row["model"], 0)
        row["to_buy"] = max(0, row["cards"] - row["owned"])
    rows.sort(key=lambda r: (r.get("cost", float("inf")), r["to_buy"], r["cards"], r["model"]))
    return {"options": rows, "priced": bool(prices), "short": unplaced,
            "note": "cards by memory and MIG geometry for the advised demand; compute is not scaled between models"}
