# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The states of the day a Plan describes, as report.md and split.svg show them.

At any time of day one state is in force: a sharing window, or the base state outside every
window. Each state is drawn and reported in full: its nodes (a window's changed nodes in place
of the base ones), each team's nominal quota (a window's ClusterQueues), its hours in the Plan's
time zone, and which whole-GPU workloads a person should expect on which whole GPU: each team's
on its own GPUs first, then borrowed from an idle GPU of a team that lends, as Kueue admits
them (a workload gets all its GPUs or waits).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.names import GPU_RESOURCE
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import clock_minutes, window_minutes
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG, WHOLE
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import RECUT_STEPS, partition

DAY = 24 * 60


def _clock(minute: int) -> str:
    return "%02d:%02d" % divmod(minute % DAY, 60)


def base_hours(plan: dict) -> list[tuple[str, str]]:
    """The stretches of the day outside every window, as (from, until) HH:MM pairs (one may
    run past midnight); none when there is no window (the base state is in force all day) or
    when windows cover the day."""
    covered = [False] * DAY
    for window in plan["windows"]:
        for start, end in window_minutes(window["from"], window["until"]):
            covered[start:end] = [True] * (end - start)
    if not any(covered):
        return []
    # Start the walk at a covered minute so that a stretch running past midnight stays whole.
    first = covered.index(True)
    stretches, start = [], None
    for step in range(1, DAY + 1):
        minute = (first + step) % DAY
        if not covered[minute] and start is None:
            start = minute
        elif covered[minute] and start is not None:
            stretches.append((_clock(start), _clock(minute)))
            start = None
    return sorted(stretches, key=lambda s: clock_minutes(s[0]))


def _quotas_of(cluster_queues: list[dict]) -> dict:
    """Team -> {"<flavor> <resource>": nominal quota}, from ClusterQueue objects (the same keys
    as a Plan team's ``owns``)."""
    quotas = {}
    for cq in cluster_queues:
        owns = quotas.setdefault(cq["metadata"]["name"], {})
        for group in cq["spec"].get("resourceGroups", []):
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    if resource["nominalQuota"]:
                        owns["%s %s" % (flavor["name"], resource["name"])] = resource["nominalQuota"]
    return quotas


def day_states(plan: dict) -> list[dict]:
    """The base state, then each window, in full.

    Each is a dict: ``window`` (None for the base state), ``hours`` ((from, until) pairs in
    ``timezone``), ``timezone``, ``nodes`` (Plan nodes in force), ``quotas`` (team ->
    {"<flavor> <resource>": nominal quota}), ``whole`` ((node, index) -> {"workloads",
    "borrower"}) and ``waiting`` (whole-GPU workloads that cannot be admitted in this state, with
    why)."""
    zone = plan["cluster"]["timezone"]
    states = [{"window": None, "hours": base_hours(plan), "timezone": zone, "nodes": plan["nodes"],
               "quotas": {t["name"]: dict(t["owns"]) for t in plan["teams"]}}]
    for window in plan["windows"]:
        changed = {n["name"]: n for n in window["nodes"]}
        cluster_queues = [o for o in window["kueue"]["objects"] if o["kind"] == "ClusterQueue"]
        states.append({"window": window["name"], "hours": [(window["from"], window["until"])], "timezone": zone,
                       "nodes": [changed.get(n["name"], n) for n in plan["nodes"]],
                       "quotas": _quotas_of(cluster_queues)})
    for state in states:
        state["whole"], state["waiting"] = whole_gpu_use(plan, state["nodes"])
    return states


def whole_gpu_use(plan: dict, nodes: list[dict]) -> tuple[dict, list[str]]:
    """Which whole-GPU workloads run on which whole GPU of ``nodes``, as Kueue would admit them
    with nothing else queued: each replica (one pod) gets all its GPUs on one server or waits,
    on the first server where its team's free GPUs plus those it may borrow (idle GPUs of
    teams that lend, or of the cohort pool, within lending and borrowing limits) are enough,
    its own first; a GPU must hold the replica's share of its memory."""
    teams = {t["name"]: t for t in plan["teams"]}
    servers = {}                                    # name -> (card MiB, {owner: [free indexes]})
    use = {}
    for n in nodes:
        for g in n["gpus"]:
            if g["mode"] == WHOLE and g.get("resource") == GPU_RESOURCE:
                servers.setdefault(n["name"], (CATALOG[n["model"]].memory_mib, {}))[1].setdefault(g["team"], []).append(g["index"])
                use[(n["name"], g["index"])] = {"workloads": [], "borrower": None}
    lent, borrowed, waiting = {}, {}, []
    failed = {}                                     # team -> [(GPUs, MiB)] that found no server
    # Capacity only shrinks, so a replica that found no server stops any later one of its team
    # that needs as many GPUs and as much memory: each server is scanned once per such size.

    def lendable(team: dict, owner) -> int:
        if owner == team["name"] or not team["borrow"] or (owner is not None and not teams[owner]["lend"]):
            return 0
        if owner is None or teams[owner]["lending_limit"] is None:
            return DAY                              # no limit of the owner's
        return max(teams[owner]["lending_limit"] - lent.get(owner, 0), 0)

    for w in (w for w in plan["workloads"] if w["sharing"] == WHOLE):
        team, need = teams[w["team"]], w["gpus_per_replica"]
        need_mib = w["memory_gib"] * 1024 / need
        may_borrow = DAY if team["borrowing_limit"] is None else max(team["borrowing_limit"] - borrowed.get(w["team"], 0), 0)
        left, best = 0, (0, 0)
        for _replica in range(w["replicas"]):
            if any(k <= need and mib <= need_mib for k, mib in failed.get(w["team"], [])):
                left += 1
                continue
            chosen, best = None, (0, 0)
            for name, (mib, free) in servers.items():
                if mib < need_mib:
                    continue
                own = len(free.get(w["team"], []))
                others = min(sum(min(len(idx), lendable(team, o)) for o, idx in free.items() if o != w["team"]), may_borrow)
                best = max(best, (own, others), key=sum)
                if own + others >= need:
                    chosen = name
                    break
            if chosen is None:
                failed.setdefault(w["team"], []).append((need, need_mib))
                left += 1
                continue
            free = servers[chosen][1]
            taken = [(w["team"], i) for i in free.get(w["team"], [])[:need]]
            for owner in [o for o in free if o != w["team"]]:  # a copy: owners may leave free
                room = min(need - len(taken), lendable(team, owner), may_borrow)
                taken += [(owner, i) for i in free[owner][:max(room, 0)]]
            for owner, index in taken:
                free[owner].remove(index)
                if not free[owner]:
                    del free[owner]
                    if not free:
                        del servers[chosen]             # full: later replicas skip it
                use[(chosen, index)]["workloads"].append(w["name"])
                if owner != w["team"]:
                    use[(chosen, index)]["borrower"] = w["team"]
                    borrowed[w["team"]] = borrowed.get(w["team"], 0) + 1
                    may_borrow -= 1
                    if owner is not None:
                        lent[owner] = lent.get(owner, 0) + 1
        if left:
            waiting.append("%s (%s) waits%s: needs %d whole GPU%s on one server; %s has %d free there and %s"
                           % (w["name"], w["team"], "" if left == w["replicas"] else " (%d of %d replicas)" % (left, w["replicas"]),
                              need, "s" if need > 1 else "", w["team"], best[0],
                              "can borrow %d" % best[1] if team["borrow"] else "does not borrow"))
    return use, waiting


def _state_at(plan: dict, minute: int) -> str | None:
    """The window in force at ``minute`` of the day, or None (the base state)."""
    return next((w["name"] for w in plan["windows"]
                 if any(a <= minute % DAY < b for a, b in window_minutes(w["from"], w["until"]))), None)


def _occupants(plan: dict, state: dict, key: tuple[str, int], gpu: dict) -> list[str]:
    """The pods a person should expect on GPU ``key`` in ``state``: its MIG slices' replicas,
    the pods of the workloads sharing it, or the whole-GPU workloads Kueue admits on it."""
    if gpu["mode"] == MIG:
        return ["%s replica %d (%s)" % (s["workload"], s["replica"], s["profile"])
                for s in gpu["mig"]["slices"] if s["workload"]]
    if gpu["mode"] == WHOLE:
        use = state["whole"].get(key) or {"workloads": [], "borrower": None}
        return ["%s (%s%s)" % (w, use["borrower"] or gpu["team"] or "cohort pool",
                               ", borrowed from %s" % (gpu["team"] or "the cohort pool") if use["borrower"] else "")
                for w in use["workloads"]]
    return ["the pods of %s (%s, %s)" % (w["name"], w["team"], w["sharing"]) for w in plan["workloads"]
            if w["sharing"] == gpu["mode"] and w["team"] == gpu["team"]]


def switches(plan: dict) -> list[dict]:
    """What each switch between two states of the day does to running work.

    One dict per switch, in clock order: ``at`` (HH:MM), ``old`` and ``new`` (window names,
    None for the base state), ``into`` (True when ``new`` is a window), and ``gpus``: each
    GPU that changes, with ``gpu`` ((node, index)), ``recut`` (its MIG partition changes:
    the gpu_operator role refuses the change while a pod may hold it, so the switch waits for
    ``pods``), ``old``/``new`` (mode and team) and ``pods`` (who runs there before the switch).
    A GPU that is not re-cut but changes mode, resource or team does not wait: its pods keep
    their device, and should have ended."""
    states = {s["window"]: s for s in day_states(plan)}
    out = []
    for window in plan["windows"]:
        for clock, into in ((window["from"], True), (window["until"], False)):
            minute = clock_minutes(clock)
            old, new = _state_at(plan, minute - 1), _state_at(plan, minute)
            if old == new:
                continue
            before = {(n["name"], g["index"]): g for n in states[old]["nodes"] for g in n["gpus"]}
            after = {(n["name"], g["index"]): g for n in states[new]["nodes"] for g in n["gpus"]}
            gpus = []
            for key in sorted(before):
                g, h = before[key], after[key]
                recut = partition(g) != partition(h)
                if recut or (g["mode"], g.get("resource"), g["team"]) != (h["mode"], h.get("resource"), h["team"]):
                    gpus.append({"gpu": key, "recut": recut, "old": (g["mode"], g["team"]), "new": (h["mode"], h["team"]),
                                 "pods": _occupants(plan, states[old], key, g)})
            out.append({"at": clock, "old": old, "new": new, "into": into, "gpus": gpus})
    unique = {(s["at"], s["old"], s["new"]): s for s in out}
    return sorted(unique.values(), key=lambda s: clock_minutes(s["at"]))


def _state_name(window: str | None) -> str:
    return "window %s" % window if window else "the base state"


def switch_text(plan: dict, switch: dict, short: bool = False) -> str:
    """One sentence per switch, the same in report.md and split.svg: what must have ended
    (entering a window) or what blocks the switch (leaving it); ``short`` leaves out how the
    gpu_operator role waits (the picture's note)."""
    zone = plan["cluster"]["timezone"]
    head = "At %s %s (%s -> %s)" % (switch["at"], zone, _state_name(switch["old"]), _state_name(switch["new"]))
    if not switch["gpus"]:
        return head + ": no GPU changes; only quotas switch."
    parts = []
    for g in switch["gpus"]:
        what = "%s GPU %d %s -> %s%s" % (g["gpu"][0], g["gpu"][1], g["old"][0], g["new"][0],
                                         ", re-cut" if g["recut"] else "")
        pods = ", ".join(g["pods"])
        if not pods:
            parts.append("%s: nothing runs there" % what)
        elif g["recut"] and switch["into"]:
            parts.append("%s: %s must have ended, or the switch waits for them" % (what, pods))
        elif g["recut"]:
            parts.append("%s: the switch back waits while %s runs there" % (what, pods))
        else:
            parts.append("%s: %s should have ended (not waited for: they keep their device)" % (what, pods))
    waits = any(g["recut"] and g["pods"] for g in switch["gpus"]) and not short
    tail = (" The gpu_operator role refuses to re-cut a GPU under running pods and names them; the next scheduled "
            "run switches once they are gone (with allow_disruption it does not wait: %s)." % RECUT_STEPS) if waits else ""
    return "%s: %s.%s" % (head, "; ".join(parts), tail)


__all__ = ["base_hours", "day_states", "switch_text", "switches", "whole_gpu_use"]
