# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor: weeks of dcgm-exporter and kube-state-metrics history in, a proposed
split (``gpushare_workloads`` and per-GPU modes) with its evidence out.

Pure Python with numpy (no Ansible import). The entry points, by concern:

* ``fetch_usage`` (``usage.py``) reads the history from Prometheus into ``UsageData``: one
  ``GpuSeries`` per (GPU or MIG instance, pod), aligned on one time grid.
* ``advise`` (here) turns ``UsageData`` and the current inventory into the advice: per
  service the evidence (``features.py``: memory needed, compute needed, the pattern), the
  kind and the choice, each decided by the first rule that holds in an ordered, named list
  (``rules.py``: whole GPU, the smallest MIG profile that holds memory and compute,
  time-slicing with replicas from memory, or DRA); per team quotas from concurrent use and
  sharing windows from idle hours; what to buy; and a proposal that ``plan.yml`` accepts
  (``proposal.py``). Every threshold is a field of ``Settings`` (``settings.py``).

A time-sliced GPU's values are given to one pod or copied to every sharer, so it is read as
one pool (see docs/advisor.md).
"""

from __future__ import annotations

from collections import defaultdict

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model as inv_model
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import SHARED_MODES
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import (
    ADVICE_FORMAT, MIB_PER_GIB, AdviceError, Settings)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import calibration as calibration_file
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import identity
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import (
    METRIC_ACTIVE, METRIC_FREE, METRIC_MEMORY, METRIC_OWNER, METRIC_UTIL, NODES_PER_QUERY, SECONDS_PER_DAY,
    GpuSeries, PodCounts, UsageData, _add_row, _np, fetch_usage, iso, present_mask)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.identity import service_name
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.features import (
    _Context, chart_data, compute_slices_of, evidence, features, services_of)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.rules import (
    KIND_RULES, RULES, KindRule, Rule, choose, choose_profile, detect_kind, signature)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.proposal import (
    idle_hours, propose, team_quotas, windows_in)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.repair import REPAIRS, Repair, plan_proposal

# What tests, benchmarks/advise_fleet.py (which decodes one answer through _add_row) and the
# usage_advisor module import from here.
__all__ = [
    "ADVICE_FORMAT", "MIB_PER_GIB", "AdviceError", "Settings",
    "METRIC_ACTIVE", "METRIC_FREE", "METRIC_MEMORY", "METRIC_OWNER", "METRIC_UTIL", "NODES_PER_QUERY",
    "GpuSeries", "PodCounts", "UsageData", "_add_row", "fetch_usage", "service_name",
    "compute_slices_of", "choose_profile", "detect_kind", "KIND_RULES", "KindRule", "RULES", "Rule",
    "REPAIRS", "Repair", "advise", "match_label_names", "plan_proposal",
]


def advise(usage: UsageData, variables: dict, settings: Settings = Settings(), check: bool = True,
           calibration: calibration_file.Calibration = calibration_file.DEFAULT) -> dict:
    """The advice for ``usage`` and the inventory ``variables`` (as the plan module takes them,
    plus ``gpushare_advise_match``: how each workload's pods are recognised, identity.py).
    ``calibration``: what the sharing modes cost, measured (calibration.py), cited where the
    rules choose between them.

    Raises AdviceError when there is nothing to advise from (no series, too little history)
    or the workloads' selectors are wrong (one pod matched by two workloads, a selector that
    matches no pod). With ``check`` the proposal is planned and, while the planner refuses it,
    repaired (repair.py): ``plan_check`` and ``repairs`` say how.
    """
    inventory = _inventory(variables)
    selectors = _selectors(variables, inventory)
    if not usage.series:
        raise AdviceError("no GPU series in %s: nothing to advise from" % (usage.source or "the data"))
    ctx = _Context(usage, inventory, settings)
    ctx.calibration = calibration
    ctx.raw_nodes = {inv_model.node_name(str(h)): (str(h), v) for h, v in (variables.get("gpushare_nodes") or {}).items()}
    first, last, node_present = _observed(usage, settings)
    window = slice(first, last + 1)
    gaps = {}
    for node, p in node_present.items():
        missing = 1.0 - float(p[window].mean())
        if missing > settings.max_gap:
            gaps[node] = missing
    outages = _outages(usage, settings, node_present, window)
    # Where a node reported nothing (gone, or its exporter), within what max_gap allows, its
    # services are not absent: presence is measured over the steps their nodes reported.
    ctx.node_up = {node: p for node, p in node_present.items() if node not in gaps}
    ctx.identity = identity.assign(_pods(usage), inventory.workloads, selectors, _team_namespaces(inventory))
    services, notes = services_of(ctx)
    ctx.services = services          # the rules read a service's neighbours on its cards
    notes = list(usage.notes) + notes
    half = first + (last + 1 - first) // 2
    halves = (slice(first, half), slice(half, last + 1))
    declared = {w.name: w for w in inventory.workloads}
    results, strays = [], []
    for (ns, name), svc in sorted(services.items()):
        team = ctx.team_of_ns.get(ns)
        matched = name in ctx.identity.matched and name in declared
        entry = _service_advice(ctx, svc, team, declared[name] if matched else None, gaps, window, halves)
        entry["identity"] = _identity_evidence(ctx, svc)
        if matched:
            if team is not None and declared[name].team != team:
                notes.append("service %s runs in namespace %s (team %s) but the inventory gives it to team %s"
                             % (name, ns, team, declared[name].team))
            results.append(entry)
        else:
            strays.append(entry)
    seen = {r["name"] for r in results}
    for w in inventory.workloads:
        if w.name not in seen:
            results.append({"name": w.name, "team": w.team, "namespace": None, "declared": _declared(w),
                            "status": "no_data", "reason": _no_data_reason(ctx, w, selectors, strays),
                            "identity": {"rule": "match" if w.name in selectors else "name", "pods": 0}})
    results += _unmatched(ctx, strays, results, selectors)
    teams = team_quotas(ctx, services, window)
    proposal = propose(ctx, results, teams, services, window)
    advice = {"format": ADVICE_FORMAT, "source": usage.source,
              "window": {"from": iso(usage, first), "until": iso(usage, last),
                         "days": round(_days(usage, first, last), 2), "step_s": usage.step,
                         "timezone": inventory.policy.timezone},
              "settings": settings.__dict__, "calibration": calibration.as_dict(), "gaps": {n: round(v, 3) for n, v in gaps.items()},
              "outages": outages,
              "services": results, "teams": teams, "windows": proposal.pop("windows"),
              "buy": proposal.pop("buy"), "proposal": proposal, "notes": notes,
              "unmatched": [_unmatched_row(r) for r in results if r.get("identity", {}).get("rule") == "unmatched"],
              "repairs": [], "plan_check": {"status": "not checked", "text": "not checked", "problems": []}}
    if check:
        plan_proposal(advice, variables)
    # what the report says of windows is what the proposed nodes hold, after any repair
    advice["windows"] = windows_in(advice["proposal"]["nodes"], advice["windows"])
    return advice


def match_label_names(variables: dict) -> tuple:
    """The kube_pod_labels keys the workloads' selectors read (gpushare_advise_match), after
    checking the inventory and the selectors (AdviceError): what fetch_usage reads."""
    inventory = _inventory(variables)
    return tuple(sorted(identity.selector_label_names(_selectors(variables, inventory))))


def _team_namespaces(inventory) -> dict:
    return {t.name: tuple(t.namespaces) for t in inventory.teams}


def _selectors(variables: dict, inventory) -> dict:
    return identity.parse_match(variables.get("gpushare_advise_match"), inventory.workloads,
                                _team_namespaces(inventory))


def _pods(usage: UsageData) -> list:
    """Every pod known: from kube_pod_owner (with its labels) and from the GPU series."""
    keys = set(usage.owners) | {(s.namespace, s.pod) for s in usage.series if s.namespace and s.pod}
    out = []
    for ns, pod in keys:
        kind, owner = usage.owners.get((ns, pod), (None, None))
        out.append(identity.Pod(ns, pod, kind, owner, tuple(usage.labels.get((ns, pod), ()))))
    return out


def _identity_evidence(ctx: _Context, svc) -> dict:
    """How the service's pods were recognised, for the report."""
    how = {ctx.identity.how.get(key, "name") for key in svc.pod_series}
    rule = "match" if "match" in how else ("unmatched" if how == {"unmatched"} else
                                           "name-prefix" if "name-prefix" in how else "name")
    keys = sorted(svc.pod_series)
    # each pod's owner in its own namespace; a pod outside the service's namespace is shown with its own
    pods = [p if ns == svc.namespace else "%s/%s" % (ns, p) for ns, p in keys]
    owners = sorted({"%s %s" % ctx.usage.owners.get(key, ("?", "?")) for key in keys})
    return {"rule": rule, "pods": len(pods), "examples": pods[:5], "owners": owners[:5]}


def _no_data_reason(ctx: _Context, w, selectors: dict, strays: list) -> str:
    same_team = [s for s in strays if s.get("team") == w.team]
    if w.name in selectors:
        how = "its selectors match pods that hold no GPU in the metrics"
    else:
        how = ("no pod's controller is named %s or %s-... in the namespaces of team %s"
               % (w.name, w.name, w.team))
    hint = ""
    if same_team:
        hint = ("; pods of team %s that match no workload: %s (see 'Pods that match no workload'; "
                "gpushare_advise_match says which are %s's)"
                % (w.team, ", ".join("%s (%d pods)" % (s["name"], s["identity"]["pods"]) for s in same_team[:5]),
                   w.name))
    return "not seen in the GPU metrics: %s%s; the current entry is kept" % (how, hint)


def _unmatched(ctx: _Context, strays: list, results: list, selectors: dict) -> list:
    """Services of pods that match no workload: proposed as a new entry when they duplicate
    none (same name as a workload; or a workload of their team, of their kind, seen in no
    pod), else reported with the selector that would make them that workload's."""
    declared = {w.name: w for w in ctx.inventory.workloads}
    no_data = {r["name"] for r in results if r["status"] == "no_data"}
    taken = set(declared)
    out = []
    for r in strays:
        if r["status"] == "unknown_namespace":
            out.append(r)
            continue
        name = identity.entry_name(r["name"])
        twins = [w for w in ctx.inventory.workloads if w.name in no_data and w.team == r["team"]
                 and (r.get("kind") in (None, w.kind))]
        if r["name"] in ctx.identity.collisions or name in declared:
            r.update(status="unmatched", reason="its pods match no workload, but the inventory has a workload named "
                     "%s: not proposed twice" % (name or r["name"]))
        elif twins:
            w = twins[0]
            r.update(status="unmatched", duplicates=w.name, suggested_match={w.name: _suggest(ctx, r)},
                     reason="its pods match no workload and look like %s's (team %s, kind %s, no pod matched): not "
                            "proposed as a new entry; to count them as %s add to gpushare_advise_match: %s"
                            % (w.name, w.team, w.kind, w.name, identity._flow({w.name: _suggest(ctx, r)})))
        elif name is None or name in taken:
            r.update(status="unmatched", reason="its pods match no workload and %s is no free workload name: not "
                                                "proposed" % r["name"])
        elif r["status"] == "ok":
            r.update(new=True, name=name)
            taken.add(name)
        out.append(r)
    del selectors
    return out


def _suggest(ctx: _Context, r: dict) -> dict:
    """A selector for the pods of unmatched service ``r``."""
    ns, group = r["namespace"], r["name"]
    pods = [p for (pns, p), key in ctx.identity.of.items() if key == (ns, group)]
    owners = {ctx.usage.owners.get((ns, p), (None, None)) for p in pods}
    if all(k in (None, identity.NO_OWNER) for k, _o in owners):
        return {"namespace": ns, "owner_kind": identity.NO_OWNER, "name_prefix": group + "-"}
    return {"namespace": ns, "owner_name": group}


def _unmatched_row(r: dict) -> dict:
    return {"name": r["name"], "namespace": r.get("namespace"), "team": r.get("team"), "status": r["status"],
            "pods": r["identity"]["pods"], "examples": r["identity"]["examples"], "owners": r["identity"]["owners"],
            "proposed": bool(r.get("new")), "duplicates": r.get("duplicates"),
            "suggested_match": r.get("suggested_match"), "reason": r.get("reason", "proposed as a new workload")}


def _inventory(variables: dict):
    try:
        return inv_model.load_inventory(variables)
    except PlanInvalid as invalid:
        raise AdviceError("the current inventory is invalid, fix it first (plan.yml shows the same):\n%s"
                          % invalid) from None


def _days(usage: UsageData, first: int, last: int) -> float:
    return (last - first + 1) * usage.step / float(SECONDS_PER_DAY)


def _observed(usage: UsageData, settings: Settings) -> tuple:
    """The first and last grid points with a sample, and per node where it has samples;
    AdviceError when there are none or they span less than ``min_days``."""
    np = _np()
    any_present = np.zeros(usage.steps, dtype=bool)
    node_present = defaultdict(lambda: np.zeros(usage.steps, dtype=bool))
    for s in usage.series:
        p = present_mask(s, usage.steps)
        any_present |= p
        node_present[s.node] |= p
    if not any_present.any():
        raise AdviceError("the GPU series in %s hold no samples: nothing to advise from" % (usage.source or "the data"))
    first, last = int(np.flatnonzero(any_present)[0]), int(np.flatnonzero(any_present)[-1])
    span_days = _days(usage, first, last)
    if span_days + settings.min_days_slack_hours / 24.0 < settings.min_days:
        raise AdviceError("not enough data: %s holds %.1f days of GPU history (%s to %s), the advisor needs at "
                          "least %d (min_days); wait, or lower min_days knowingly"
                          % (usage.source or "the data", span_days, iso(usage, first), iso(usage, last),
                             settings.min_days))
    return first, last, node_present


def _outages(usage: UsageData, settings: Settings, node_present: dict, window: slice) -> list:
    """Stretches of at least ``outage_hours`` in which a node reported nothing at all (the node,
    or its exporter, gone): the report lists them, since presence is measured without them."""
    np = _np()
    out = []
    least = max(1, int(round(settings.outage_hours * 3600 / usage.step)))
    total = window.stop - window.start
    for node, p in sorted(node_present.items()):
        edges = np.diff(np.concatenate([[0], (~p[window]).astype(int), [0]]))
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            if b - a >= least:
                out.append({"node": node, "from": iso(usage, window.start + int(a)),
                            "until": iso(usage, window.start + int(b)), "hours": round((b - a) * usage.step / 3600.0, 1),
                            "share": round(float(b - a) / total, 3)})
    return out


def _service_advice(ctx: _Context, svc, team: str | None, declared, gaps: dict, window: slice, halves: tuple) -> dict:
    """One service's result: evidence, kind, choice and the rule that decided, or why none
    is given (unknown namespace, gaps, too short a history, unstable)."""
    np = _np()
    s = ctx.settings
    entry = {"name": svc.name, "namespace": svc.namespace, "team": team, "declared": _declared(declared)}
    if team is None:
        entry.update(status="unknown_namespace", reason="namespace %s belongs to no team of gpushare_teams" % svc.namespace)
        return entry
    namespaces = sorted({ns for ns, _pod in svc.pod_series})
    if len(namespaces) > 1:
        entry["namespaces"] = namespaces
    f = features(ctx, svc, window)
    entry["evidence"] = evidence(f)
    entry["chart"] = chart_data(ctx, f, window)
    gap_nodes = sorted({d.key[0] for d in svc.devices.values()} & set(gaps))
    observed_days = f["present"].sum() * ctx.usage.step / 86400.0
    span = np.flatnonzero(f["present"])
    service_span = (span[-1] - span[0] + 1) * ctx.usage.step / 86400.0 if span.size else 0.0
    if gap_nodes:
        entry.update(status="not_enough_data", reason="samples missing on %s (%s); the advisor allows %.0f %%"
                     % (", ".join(gap_nodes), ", ".join("%.0f %%" % (100 * gaps[n]) for n in gap_nodes),
                        100 * s.max_gap))
        return entry
    if service_span + s.min_days_slack_hours / 24.0 < s.min_days:
        entry.update(status="not_enough_data", reason="seen over %.1f days (%.1f days of samples); needs %d"
                     % (service_span, observed_days, s.min_days))
        return entry
    kind, why = detect_kind(f, s)
    choice = choose(ctx, svc, f, kind)
    entry.update(kind=kind, kind_why=why)
    entry.update(choice)
    if choice.get("sharing") in SHARED_MODES:
        entry["idle_hours"] = idle_hours(ctx, f, window)
        entry["shared_with"] = sorted({w.split("/", 1)[1] for d in f["sharing"] for w in d["with"]})
    if choice["status"] == "ok" and s.stability:
        _check_stability(ctx, svc, entry, halves)
    return entry


def _check_stability(ctx: _Context, svc, entry: dict, halves: tuple) -> None:
    """The kind and choice in each half of the window; unstable when they differ."""
    sig = []
    for h in halves:
        fh = features(ctx, svc, h)
        if fh["present"].any():
            kh = detect_kind(fh, ctx.settings)[0]
            sig.append((kh,) + signature(choose(ctx, svc, fh, kh)))
        else:
            sig.append(("absent",))
    entry["halves"] = [" ".join(str(x) for x in s_ if x is not None) for s_ in sig]
    if sig[0] != sig[1]:
        entry.update(status="unstable", reason="the choice differs between the two halves of the window "
                     "(%s / %s): the current entry is kept" % tuple(entry["halves"]))


def _declared(w) -> dict | None:
    if w is None:
        return None
    out = {"kind": w.kind, "sharing": w.sharing, "replicas": w.replicas, "gpus": w.gpus}
    if w.memory_gib:
        out["memory_gib"] = w.memory_gib
    if w.mig_profile:
        out["mig_profile"] = w.mig_profile
    return out
