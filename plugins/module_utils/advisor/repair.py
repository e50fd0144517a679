# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A proposal the planner accepts, always: the proposal is planned with the planner
``plan.yml`` uses (``planners.plan.build_plan``); while it is refused, the first repair of
``REPAIRS`` (an ordered, named list) that applies changes it, and the advice says which rule
did what. Only when no repair helps is the current inventory kept, with the planner's reasons.

``keep-owned``: GPUs that the proposal gave to another team go back to the team that owns them
now, as they are. ``narrow-pools``: time-sliced (and MPS) pools wanting more replicas than
their GPUs give get more sharers per GPU, up to the inventory's limit of 64. ``to-buy``: the
advised workloads the planner still names (by path, or by name in a team's problem;
or, for a shortfall of all MIG or shared replicas,
the one of the lowest priority team asking most) leave the proposal for its current entry,
or, without one, for "GPUs to buy". ``current-layout``: the advised workloads on the GPUs as
they are now.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Callable

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG, SHARED_MODES
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.rules import MAX_SHARED_REPLICAS

_WORKLOAD_PATH = re.compile(r"^gpushare_workloads\[(\d+)\]")


@dataclass
class State:
    """What is being repaired: the proposed workloads and nodes, and the variables as given."""
    workloads: list
    nodes: dict
    variables: dict
    advice: dict
    moved: list                    # [(workload entry, where it went: "current entry" | "GPUs to buy", why)]
    short: list = None             # lines for "GPUs to buy" the repairs add

    def __post_init__(self):
        self.short = [] if self.short is None else self.short

    def candidate(self) -> dict:
        return dict(self.variables, gpushare_workloads=self.workloads, gpushare_nodes=self.nodes)


@dataclass(frozen=True)
class Repair:
    name: str
    apply: Callable[[State, list], str | None]     # (state, the planner's problems) -> what it did, or None


def _keep_owned(state: State, problems: list) -> str | None:
    """GPUs that changed team go back to their owner as they are now."""
    del problems
    done = []
    for host, node in state.nodes.items():
        current = {g.get("index"): g for g in ((state.variables.get("gpushare_nodes") or {}).get(host) or {})
                   .get("gpus", []) if isinstance(g, dict)}
        for i, g in enumerate(node.get("gpus", [])):
            was = current.get(g["index"])
            if was and was.get("team") and g.get("team") != was.get("team"):
                node["gpus"][i] = copy.deepcopy(was)
                done.append("%s GPU %d back to team %s (%s), which owns it; the proposal gave it to %s"
                            % (host, g["index"], was["team"], was.get("mode", "auto"), g.get("team")))
    _one_replica_count(state.nodes)
    return "; ".join(done) or None


def _one_replica_count(nodes: dict) -> None:
    """One replica count per node and shared mode (the device plugin's), the largest."""
    for node in nodes.values():
        for mode in SHARED_MODES:
            gpus = [g for g in node.get("gpus", []) if g.get("mode") == mode]
            if gpus:
                top = max(g.get("replicas", 2) for g in gpus)
                for g in gpus:
                    g["replicas"] = top


def _narrow_pools(state: State, problems: list) -> str | None:
    """More sharers per GPU where the shared modes' replicas fall short of their workloads'."""
    del problems
    done = []
    for mode in SHARED_MODES:
        demand = sum(int(w.get("replicas", 1)) for w in state.workloads if w.get("sharing") == mode)
        gpus = [(host, g) for host, node in state.nodes.items() for g in node.get("gpus", []) if g.get("mode") == mode]
        supply = sum(g.get("replicas", 2) for _h, g in gpus)
        if not gpus or demand <= supply:
            continue
        per_gpu = min(MAX_SHARED_REPLICAS, int(math.ceil(demand / float(len(gpus)))))
        if all(g.get("replicas", 2) >= per_gpu for _h, g in gpus):
            continue
        for _h, g in gpus:
            g["replicas"] = max(g.get("replicas", 2), per_gpu)
        pools = [s for s in state.advice["services"] if s.get("status") == "ok" and s.get("sharing") == mode]
        wanted = sum(s.get("pool_gpus", 1) for s in pools)
        done.append("%d %s replicas wanted on %d GPU%s (%s): %d sharers per GPU (memory as advised is not "
                    "guaranteed: time-slicing does not isolate it)"
                    % (demand, mode, len(gpus), "" if len(gpus) == 1 else "s",
                       ", ".join("%s/%d" % (h, g["index"]) for h, g in gpus), per_gpu))
        if wanted > len(gpus):
            state.short.append("%s pools (%s): %d GPU%s short of the %d their memory needs, after the repair "
                               "narrow-pools" % (mode, ", ".join(s["name"] for s in pools), wanted - len(gpus),
                                                 "" if wanted - len(gpus) == 1 else "s", wanted))
    return "; ".join(done) or None


def _to_buy(state: State, problems: list) -> str | None:
    """The advised workloads the planner names leave the proposal: their current entry is
    kept, or, without one, they go to "GPUs to buy"."""
    advised = {s["name"]: s for s in state.advice["services"] if s.get("status") == "ok"}
    named = []
    for p in problems:
        m = _WORKLOAD_PATH.match(p.path)
        if m and int(m.group(1)) < len(state.workloads):
            named.append(state.workloads[int(m.group(1))]["name"])
        elif p.path.startswith("gpushare_teams"):  # a team's demand beyond its quota names its workloads
            named += [n for n in advised if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(n), str(p))]
    if not named:
        text = " ".join(str(p) for p in problems)
        modes = [m for m in (MIG,) + SHARED_MODES if re.search(r"\b%s\b" % re.escape(m), text, re.I)]
        priority = {t.get("name"): t.get("priority", 0) for t in state.variables.get("gpushare_teams") or []}
        pick = [w for w in state.workloads if w["name"] in advised and w.get("sharing") in modes]
        pick.sort(key=lambda w: (priority.get(w.get("team"), 0), -_size(advised[w["name"]]), w["name"]))
        named = [pick[0]["name"]] if pick else []
    named = [n for n in dict.fromkeys(named) if n in advised and not any(m[0]["name"] == n for m in state.moved)]
    if not named:
        return None
    current = {w.get("name"): w for w in state.variables.get("gpushare_workloads") or [] if isinstance(w, dict)}
    done = []
    for name in named:
        entry = next(w for w in state.workloads if w["name"] == name)
        why = " ".join("; ".join(str(p) for p in problems
                                 if name in str(p) or not _WORKLOAD_PATH.match(p.path)).split())[:400]
        if name in current:
            state.workloads[state.workloads.index(entry)] = copy.deepcopy(current[name])
            state.moved.append((entry, "current entry", why))
            done.append("%s keeps its current entry; as advised (%s) it does not fit: to GPUs to buy"
                        % (name, _short(entry)))
        else:
            state.workloads.remove(entry)
            state.moved.append((entry, "GPUs to buy", why))
            done.append("%s (new, %s) left out of the proposal: to GPUs to buy" % (name, _short(entry)))
    return "; ".join(done)


def _size(s: dict) -> float:
    return float(s.get("replicas", 1)) * float(s.get("memory_need_mib") or 0)


def _short(w: dict) -> str:
    return ", ".join("%s %s" % (k, v) for k, v in w.items() if k not in ("name", "team"))


def _current_layout(state: State, problems: list) -> str | None:
    """The advised workloads on the GPUs as they are now."""
    del problems
    current = state.variables.get("gpushare_nodes") or {}
    if state.nodes == current:
        return None
    state.nodes = copy.deepcopy(current)
    return "the advised workloads on the current GPU layout (the proposed layout is left out)"


REPAIRS = (
    Repair("keep-owned", _keep_owned),
    Repair("narrow-pools", _narrow_pools),
    Repair("to-buy", _to_buy),
    Repair("current-layout", _current_layout),
)


def plan_proposal(advice: dict, variables: dict, plan: Callable = build_plan) -> dict:
    """Plan the advice's proposal, repairing it while the planner refuses it. Updates the
    advice (``proposal``, ``repairs``, ``plan_check``, GPUs to buy) and returns its
    ``plan_check``: {"status": accepted | repaired | current | refused, "text", "problems"}."""
    state = State(workloads=copy.deepcopy(advice["proposal"]["workloads"]),
                  nodes=copy.deepcopy(advice["proposal"]["nodes"]), variables=variables, advice=advice, moved=[])
    repairs, first_problems = [], None
    for _attempt in range(len(state.workloads) + 2 * len(REPAIRS) + 2):
        try:
            plan(state.candidate())
        except PlanInvalid as invalid:
            first_problems = first_problems or [" ".join(str(p).split()) for p in invalid.problems]
            for r in REPAIRS:
                did = r.apply(state, invalid.problems)
                if did:
                    repairs.append({"rule": r.name, "did": did,
                                    "planner": [" ".join(str(p).split()) for p in invalid.problems][:5]})
                    break
            else:
                break
            continue
        check = {"status": "repaired" if repairs else "accepted", "problems": first_problems or []}
        check["text"] = ("accepted" if not repairs else
                         "accepted after %d repair%s (%s); the planner first said: %s"
                         % (len(repairs), "" if len(repairs) == 1 else "s",
                            ", ".join(dict.fromkeys(r["rule"] for r in repairs)), "; ".join(first_problems)))
        _commit(advice, state, repairs, check)
        return check
    current = dict(variables)
    try:
        plan(current)
        status, text = "current", ("the proposal could not be repaired, so the current inventory is kept (no change); "
                                   "the planner said: %s" % "; ".join(first_problems or []))
    except PlanInvalid as invalid:
        status, text = "refused", "the current inventory itself is refused by the planner: %s" % invalid
    check = {"status": status, "text": text, "problems": first_problems or []}
    state.workloads = list(variables.get("gpushare_workloads") or [])
    state.nodes = dict(variables.get("gpushare_nodes") or {})
    _commit(advice, state, repairs, check)
    return check


def _commit(advice: dict, state: State, repairs: list, check: dict) -> None:
    advice["proposal"]["workloads"] = state.workloads
    advice["proposal"]["nodes"] = state.nodes
    advice["repairs"] = repairs
    advice["plan_check"] = check
    advice["buy"]["short"].extend(state.short)
    for entry, where, why in state.moved:
        advice["buy"]["short"].append("%s (%s) moved out of the proposal by the repair to-buy (%s): %s"
                                      % (entry["name"], _short(entry), where, why))
        for s in advice["services"]:
            if s["name"] == entry["name"]:
                s["repaired"] = {"rule": "to-buy", "to": where}
    if check["status"] in ("current", "refused"):
        for s in advice["services"]:
            if s.get("status") == "ok":
                s["repaired"] = {"rule": "current", "to": "current entry"}
