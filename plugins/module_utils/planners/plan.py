# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Plan: inventory in, every decision out, as a JSON-ready dict.

``build_plan(variables)`` validates the inventory, resolves ``auto`` GPUs, cuts MIG GPUs
(mig_planner), decides each node's device-plugin sharing (sharing_planner), derives the
Kueue objects (kueue_quotas) and DRA claim templates (dra_claims). Sharing windows (a
GPU that is time-sliced by day and lent whole at night) are planned the same way from
the inventory as it is inside the window, so each window is a full, valid state of its
own. Nothing here talks to a cluster; roles only apply what this returns. The format is
documented in docs/plan-format.md.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
from collections import defaultdict

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import (
    admission, changes, dra_claims, dynamic_mig, kueue_quotas, mig_planner, sharing_planner)
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid, Problems, gib
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware.gpu_catalog import CATALOG
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import (
    Inventory, check_state, clock_minutes, load_inventory, time_zone, window_minutes)
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import (
    AUTO, DRA, MIG, MIG_DYNAMIC, MODES, MPS, SHARED_MODES, TIMESLICE, WHOLE)
from ansible_collections.gpushare.cluster.plugins.module_utils.names import PLAN_FORMAT


def build_plan(variables: dict) -> dict:
    """The whole plan, or PlanInvalid listing every problem (then nothing is rendered)."""
    found = Problems()
    return _build(load_inventory(variables, deferred=found), None, found)


def plan_and_changes(variables: dict, previous_text: str | None = None, defined_variables=(),
                     previous_path: str | None = None) -> tuple[dict, dict]:
    """The plan against the previous one (the text of the applied plan's JSON, ``previous_path``
    naming its file; None: the first plan) and what it changes (changes.plan_changes). With
    ``replan: stable`` (the default) the previous plan is the GPUs' current state and the MIG
    planner keeps its partitions where it can; it must then be readable
    (changes.PreviousPlanError). ``replan: optimal`` plans from scratch and only compares.
    ``defined_variables``: model.load_inventory's."""
    found = Problems()
    inventory = load_inventory(variables, defined_variables, found)
    stable = inventory.policy.replan == "stable"
    previous = None
    if previous_text is not None:
        try:
            previous = changes.parse_previous(previous_text, inventory.policy.cluster_name)
        except changes.PreviousPlanError:
            if stable:
                raise
    plan = _build(inventory, changes.current_partitions(previous) if previous and stable else None, found)
    return plan, changes.plan_changes(previous, plan, inventory.policy.replan,
                                      changes.against(previous_path, previous_text) if previous else None)


def _build(inventory: Inventory, current: dict | None, found: Problems | None = None) -> dict:
    """The Plan; PlanInvalid with ``found`` (the problems load_inventory deferred) and every
    problem planning finds, as far as a check does not rest on one that failed: the base
    state's MIG layout is planned whatever ``found`` holds, its demand only when ``found`` is
    empty (a server that breaks a device rule does not offer what the inventory meant); each
    window's own rules are checked always, its state planned only when all went well before."""
    problems = found if found is not None else Problems()
    state = None
    try:
        state = _plan_state(inventory, Problems(), suffix="", current=current, demand=not problems)
    except PlanInvalid as invalid:
        problems.extend(invalid.problems)
    base = state["nodes"] if state and not problems else None
    windows = [_plan_window(inventory, name, base, problems) for name in _window_names(inventory)]
    problems.raise_if_any()
    _check_mps_without_mig(inventory, [state["nodes"]] + [w["nodes"] for w in windows], problems)
    problems.raise_if_any()
    _check_runs_in_some_state(inventory, state["nodes"], windows, problems)
    problems.raise_if_any()
    return {
        "format": PLAN_FORMAT,
        "cluster": {"name": inventory.policy.cluster_name,
                    "kubernetes_distribution": inventory.policy.distribution,
                    "cohort": inventory.policy.cohort,
                    "mig_leftover": inventory.policy.mig_leftover,
                    "cpu_memory_quota": inventory.policy.cpu_memory_quota,
                    "allow_disruption": inventory.policy.allow_disruption,
                    "timezone": inventory.policy.timezone,
                    # Kubernetes feature gates and minor the Plan needs (dynamic MIG), for the distribution roles.
                    "kubernetes": dynamic_mig.kubernetes_needs(state["nodes"])},
        "teams": state["teams"],
        "nodes": state["nodes"],
        "workloads": state["workloads"],
        "kueue": state["kueue"],
        "dra": {"claim_templates": state["claim_templates"], "nodes": [n["name"] for n in state["nodes"] if n["dra"]],
                # DRA driver featureGates (DynamicMIG) and what mig-dynamic GPUs get (planners/dynamic_mig.py).
                "feature_gates": dynamic_mig.driver_feature_gates(state["nodes"]),
                "dynamic_mig": state["dynamic_mig"]},
        "windows": windows,
        # What team namespaces may ask for (render_manifests: the admission policies).
        "admission": admission.plan_admission(inventory.teams, state["kueue"]["objects"],
                                              [state["nodes"]] + [w["nodes"] for w in windows]),
        "warnings": state["warnings"],
        # How the MIG layout was solved; exact unless a safety time limit stopped it (mig_planner.MigSolve).
        "mig_solve": state["mig_solve"],
    }


# --------------------------------------------------------------------------- one state

def _plan_state(inventory: Inventory, problems: Problems, suffix: str, current: dict | None = None,
                demand: bool = True) -> dict:
    """One full state; ``suffix`` names a window's configs. Workload demand is checked in
    the base state only (and not with ``demand`` False): inside a window the workloads of the
    changed GPUs are off.
    ``current``: (node, index) -> (MIG partition or None, slices) now, to keep (the base state).
    Raises PlanInvalid as soon as a step records a problem: later steps may rely on it."""
    warnings: list[str] = []
    sharing = {n.name: sharing_planner.node_sharing(n.model, {g.index: g.mode for g in n.gpus},
                                                    {g.index: g.replicas for g in n.gpus}) for n in inventory.nodes}
    mig_solve = mig_planner.MigSolve()
    layouts = _plan_mig(inventory, sharing, problems, mig_solve, current)
    problems.raise_if_any()
    whole_team = _assign_whole_gpus(inventory, layouts)
    nodes = [_node_record(n, sharing[n.name], layouts, whole_team, suffix) for n in inventory.nodes]
    if not suffix and demand:
        _check_demand(inventory, nodes, problems, warnings)
    dynamic = dynamic_mig.plan_dynamic(inventory, problems, warnings)
    capacities, labels = _capacities(nodes, dynamic)
    cpu_memory = _cpu_memory(inventory, nodes, problems)
    problems.raise_if_any()
    kueue = kueue_quotas.plan_kueue(inventory.teams, inventory.policy, capacities, cpu_memory, labels,
                                    dra_in_use=any(w.sharing == DRA for w in inventory.workloads),
                                    device_class_mappings=[dynamic_mig.device_class_mapping(dynamic["gpus"])]
                                    if dynamic["gpus"] else [])
    return {
        "nodes": nodes,
        "teams": _team_records(inventory, capacities),
        "workloads": _workload_records(inventory, nodes, dynamic),
        "kueue": kueue,
        "claim_templates": dra_claims.plan_claims(inventory.workloads, inventory.teams) + dynamic["claim_templates"],
        "dynamic_mig": {k: v for k, v in dynamic.items() if k != "claim_templates"},
        "warnings": warnings,
        "mig_solve": mig_solve.as_dict(),
    }


def _check_mps_without_mig(inventory: Inventory, node_states: list[list[dict]], problems: Problems) -> None:
    """MPS only in a cluster without MIG slices: the GPU Operator gives every device plugin the
    ClusterPolicy's mig.strategy as MIG_STRATEGY (gpu-operator controllers/object_controls.go,
    applyMIGConfiguration; an environment variable beats the config file, k8s-device-plugin
    README), and the device plugin refuses MPS under the strategy MIG slices need
    (sharing_planner.refuses_mps), so it would not start on the MPS nodes."""
    records = [n for nodes in node_states for n in nodes]
    strategy = sharing_planner.cluster_mig_strategy(records)
    if not sharing_planner.refuses_mps(strategy):
        return
    mig_nodes = sorted({n["name"] for n in records if sharing_planner.has_mig(n["gpus"])})
    mps_nodes = {n["name"] for n in records if any(g["mode"] == MPS for g in n["gpus"])}
    for node in inventory.nodes:
        if node.name in mps_nodes:
            problems.add(node.path + ".gpus", "MPS cannot run in a cluster with MIG slices (on %s): the GPU Operator "
                         "gives every device plugin the cluster's MIG strategy, %s here, and the device plugin "
                         "refuses MPS with mig-strategy %s" % (", ".join(mig_nodes), strategy, strategy), MPS,
                         "MPS where no GPU of the cluster is cut by MIG (in every window too)",
                         "Set this node's GPUs to timeslice, or keep the MIG-capable GPUs whole (mode whole), or run "
                         "the MPS servers in a cluster of their own")


def _mig_models(inventory: Inventory) -> tuple[str, ...]:
    return tuple(sorted({n.model for n in inventory.nodes if CATALOG[n.model].mig_capable and not n.dra}))


# A GPU the previous plan does not have (a new server): not in MIG mode now.
NOT_IN_MIG_MODE = {"current": None, "current_slices": ()}


def _plan_mig(inventory: Inventory, sharing, problems: Problems, solve=None, current: dict | None = None) -> dict:
    candidates = []
    layouts = {}
    for node in inventory.nodes:
        model = CATALOG[node.model]
        if not model.mig_capable or node.dra:
            continue
        share = sharing[node.name]
        full = sharing_planner.full_profile(model)
        forbidden = (full,) if share.via_mig else ()
        for gpu in node.gpus:
            # How the GPU is cut now (stable re-planning keeps it where it can).
            now = {} if current is None else current.get((node.name, gpu.index), NOT_IN_MIG_MODE)
            if gpu.mode == TIMESLICE and share.via_mig:
                # One full-size instance, time-sliced (see sharing_planner).
                layouts[(node.name, gpu.index)] = _single_instance(node, gpu, full)
            elif gpu.mode == MIG:
                if full in forbidden and full in dict(gpu.mig_layout or ()):
                    problems.add(gpu.path + ".mig_layout", "uses %s, the full-card instance that time-slices GPUs %s "
                                 "of this server" % (full, list(share.gpus)), dict(gpu.mig_layout),
                                 "profiles other than %s on this server" % full,
                                 "The device plugin time-slices a resource name, so this GPU's %s would be "
                                 "time-sliced too: use smaller profiles, or time-slice on another server" % full)
                candidates.append(mig_planner.MigCandidate(node.name, gpu.index, node.model, True, gpu.team,
                                                           gpu.mig_layout, forbidden, **now))
            elif gpu.mode == AUTO:
                candidates.append(mig_planner.MigCandidate(node.name, gpu.index, node.model, False, gpu.team,
                                                           None, forbidden, **now))
    demands = []
    mig_models = _mig_models(inventory)
    for w in inventory.workloads:
        if w.sharing != MIG:
            continue
        models = (w.gpu_model,) if w.gpu_model else mig_models
        if w.gpu_model and not CATALOG[w.gpu_model].mig_capable:
            problems.add(w.path + ".gpu_model", "%s has no MIG, and service %s needs a MIG slice" % (w.gpu_model, w.name),
                         w.gpu_model, "a MIG-capable model of the fleet: %s" % (", ".join(mig_models) or "none"),
                         "Pin a MIG-capable model, or share this service another way (sharing: whole or timeslice)")
            continue
        if w.mig_profile and not any(w.mig_profile in {p.name for p in CATALOG[m].mig_profiles} for m in models):
            problems.add(w.path + ".mig_profile", "is not a MIG profile of %s" % (", ".join(models) or "any GPU here"),
                         w.mig_profile, ", ".join(sorted({p.name for m in models for p in CATALOG[m].mig_profiles}))
                         or "none: no GPU here has MIG", "Profile names differ between GPU models")
            continue
        if not models:
            problems.add(w.path + ".sharing", "needs a MIG-capable GPU, and the inventory has none", "mig",
                         "whole, timeslice", "Add a MIG-capable server or share this workload differently")
            continue
        if not any(_may_host(c, models, w.mig_profile) for c in candidates):
            _no_mig_gpu(inventory, w, models, problems)
            continue
        demands += [mig_planner.MigDemand(w.name, w.team, r, w.memory_mib, models, w.mig_profile, w.path)
                    for r in range(w.replicas)]
    try:
        layouts.update(mig_planner.plan_mig(demands, candidates, inventory.policy.mig_leftover == "carve",
                                            solve=solve, current_known=current is not None))
    except mig_planner.MigShortfall as shortfall:
        problems.add("gpushare_workloads", str(shortfall), allowed="MIG services that fit the MIG and auto GPUs",
                     hint="Add GPUs with mode mig or auto, lower memory_gib, or allow more GPU models (gpu_model)")
    return layouts


def _may_host(c: mig_planner.MigCandidate, models: tuple[str, ...], pin: str | None) -> bool:
    """Whether GPU ``c`` could carry a slice for a service on ``models`` pinned to ``pin``."""
    if c.model not in models:
        return False
    if c.layout is not None:
        return pin is None or pin in dict(c.layout)
    return pin is None or (pin in {p.name for p in CATALOG[c.model].mig_profiles} and pin not in c.forbidden)


def _no_mig_gpu(inventory: Inventory, w, models: tuple[str, ...], problems: Problems) -> None:
    """Service ``w`` needs MIG but no GPU of its models may be cut: name the GPUs that could be."""
    could = ["%s GPU %d (%s%s)" % (n.name, g.index, g.mode, ", dra: true" if n.dra else "")
             for n in inventory.nodes if n.model in models for g in n.gpus]
    problems.add(w.path + (".gpu_model" if w.gpu_model else ".sharing"),
                 "service %s needs a MIG slice%s, but no %s GPU may be cut with MIG"
                 % (w.name, " %s" % w.mig_profile if w.mig_profile else "", " or ".join(models)),
                 w.gpu_model or "mig",
                 "GPUs that could become MIG GPUs: %s" % (", ".join(could) or "none of these models in the inventory"),
                 "Set mode: mig or auto on one of them (and dra: false on its server), or share this service "
                 "another way (sharing: whole or timeslice)")


def _single_instance(node, gpu, profile_name: str) -> mig_planner.MigLayout:
    profile = CATALOG[node.model].profile(profile_name)
    return mig_planner.MigLayout(node.name, gpu.index, node.model, [
        mig_planner.MigSlice(profile.name, 0, profile.size, profile.memory_mib, gpu.team)])


def _assign_whole_gpus(inventory: Inventory, layouts) -> dict[tuple[str, int], str | None]:
    """Owner of every GPU that stays whole; unowned auto GPUs go to serving teams short of GPUs."""
    owners: dict[tuple[str, int], str | None] = {}
    for node in inventory.nodes:
        for gpu in node.gpus:
            if (node.name, gpu.index) not in layouts and gpu.mode in (WHOLE, AUTO):
                owners[(node.name, gpu.index)] = gpu.team
    need: dict[str, int] = defaultdict(int)
    for w in inventory.workloads:
        if w.sharing in (WHOLE, DRA) and w.kind == "serving":
            need[w.team] += w.replicas * w.gpus
    for owner in owners.values():
        if owner:
            need[owner] -= 1
    for key in sorted(k for k, v in owners.items() if v is None):
        short = sorted((t for t, n in need.items() if n > 0), key=lambda t: (-need[t], t))
        if not short:
            break
        owners[key] = short[0]
        need[short[0]] -= 1
    return owners


def _node_record(node, share, layouts, whole_team, suffix: str) -> dict:
    model = CATALOG[node.model]
    config_name = "gpushare-%s%s" % (node.name, suffix)
    gpus = []
    whole_cards = 0
    mig_profiles = []
    for gpu in node.gpus:
        key = (node.name, gpu.index)
        record = {"index": gpu.index, "declared_mode": gpu.mode, "mig": None}
        if key in layouts:
            layout = layouts[key]
            record["mode"] = TIMESLICE if gpu.mode == TIMESLICE else MIG
            record["team"] = gpu.team
            record["mig"] = {"profiles": layout.counts(), "slices": [dict(vars(s)) for s in layout.slices]}
            mig_profiles += [s.profile for s in layout.slices]
        elif gpu.mode in SHARED_MODES:
            record["mode"] = gpu.mode
            record["team"] = gpu.team
            whole_cards += 1
        elif gpu.mode == MIG_DYNAMIC:
            # No layout: the DRA driver makes a slice per claim (planners/dynamic_mig.py).
            record["mode"] = MIG_DYNAMIC
            record["team"] = gpu.team
            record["resource"] = names.DYNAMIC_MIG_RESOURCE
        else:
            record["mode"] = WHOLE
            record["team"] = whole_team.get(key)
            whole_cards += 1
        if record["mode"] in SHARED_MODES:
            record["replicas"] = gpu.replicas
            record["resource"] = share.shared_resource
            record["realised_as"] = "mig-full-instance" if share.via_mig else "full-gpu"
            if MODES[record["mode"]].client_limits:
                record["per_client"] = {"compute_percent": 100 // gpu.replicas,
                                        "memory_mib": model.memory_mib // gpu.replicas}
        elif record["mode"] == WHOLE:
            record["resource"] = names.DRA_RESOURCE if node.dra else names.GPU_RESOURCE
        gpus.append(record)
    has_mig = sharing_planner.has_mig(gpus)
    labels = {names.GPU_MODEL_LABEL: node.model}
    mig_config = None
    if any(g["mode"] == MIG_DYNAMIC for g in gpus):
        # The DRA driver owns the node's MIG (every GPU of it is mig-dynamic: inventory/dynamic_mig.py).
        labels[names.DEPLOY_MIG_MANAGER_LABEL] = "false"
    elif model.mig_capable:
        entries = _mig_parted_entries(gpus)
        mig_config = {"name": _mig_config_name(node.name, entries) if has_mig else names.MIG_DISABLED_CONFIG,
                      "config": entries}
        labels[names.MIG_CONFIG_LABEL] = mig_config["name"]
    device_plugin = None
    if node.dra:
        labels[names.DRA_NODE_LABEL] = "true"
        labels[names.DEPLOY_DEVICE_PLUGIN_LABEL] = "false"
    else:
        device_plugin = {"name": config_name, "config": sharing_planner.device_plugin_config(share, has_mig)}
        labels[names.DEVICE_PLUGIN_CONFIG_LABEL] = config_name
    if node.host_driver:
        labels[names.DEPLOY_DRIVER_LABEL] = "false"
    advertised = {} if node.dra else sharing_planner.advertised(whole_cards, mig_profiles, node.model, share)
    return {
        "name": node.name, "model": node.model, "product": model.product_name, "gpu_count": len(node.gpus),
        "host_driver": node.host_driver, "dra": node.dra, "cpus": node.cpus, "memory_gib": node.memory_gib,
        "labels": dict(sorted(labels.items())), "gpus": gpus, "mig_config": mig_config,
        "device_plugin_config": device_plugin, "sharing": dataclasses.asdict(share), "advertised": advertised,
    }


def _mig_config_name(node: str, entries: list[dict]) -> str:
    """The MIG config's name, from the node and the layout itself: the MIG Manager applies a
    config when the node's label names it and never re-reads it (NVIDIA/mig-parted#108), so a
    changed layout must come under a new name, and an unchanged one (in any state or re-plan)
    keeps its name and is not re-applied. At most 63 characters, as a label value."""
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:8]
    return "gpushare-%s-%s" % (node[:63 - len("gpushare--") - len(digest)], digest)


def _mig_parted_entries(gpus: list[dict]) -> list[dict]:
    """mig-parted entries for one node: GPUs with identical layouts share one entry."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for g in gpus:
        groups[tuple(sorted(g["mig"]["profiles"].items())) if g["mig"] else None].append(g["index"])
    entries = []
    for layout, indices in sorted(groups.items(), key=lambda kv: kv[1][0]):
        entry = {"devices": sorted(indices), "mig-enabled": layout is not None}
        if layout is not None:
            entry["mig-devices"] = dict(layout)
        entries.append(entry)
    return entries


# --------------------------------------------------------------------------- checks

def _check_demand(inventory: Inventory, nodes: list[dict], problems: Problems, warnings: list[str]) -> None:
    """Workloads that can never run on what exists are errors; reliance on borrowing is a warning."""
    whole_per_node = defaultdict(int)
    for n in nodes:
        key = (n["model"], n["dra"])
        whole_per_node[key] = max(whole_per_node[key], sum(1 for g in n["gpus"] if g["mode"] == WHOLE))
    shared: dict[str, int] = defaultdict(int)
    for n in nodes:
        for g in n["gpus"]:
            if g["mode"] in SHARED_MODES:
                shared[g["mode"]] += g["replicas"]
    demand: dict = defaultdict(int)
    dra_servers = any(n["dra"] for n in nodes)
    for w in inventory.workloads:
        dra = w.sharing == DRA
        if dra and not dra_servers:
            continue        # the cause, no DRA server at all, is reported once below
        if w.sharing in (WHOLE, DRA):
            candidates = {m: c for (m, d), c in whole_per_node.items() if d == dra and (not w.gpu_model or m == w.gpu_model)}
            biggest = max(candidates.values(), default=0)
            if w.gpus > biggest:
                problems.add(w.path + ".gpus", "needs %d whole GPUs on one server; the most any %sserver has is %d"
                             % (w.gpus, "DRA " if dra else "", biggest), w.gpus, "at most %d" % biggest,
                             "A pod cannot span servers: lower gpus or add whole GPUs")
        if dra and w.min_memory_gib:
            best = max((CATALOG[n["model"]].memory_mib for n in nodes if n["dra"]), default=0)
            if w.min_memory_gib * 1024 > best:
                problems.add(w.path + ".device_request.min_memory_gib",
                             "no GPU on a DRA node has that much memory (largest: %s)" % gib(best),
                             w.min_memory_gib, "at most %s" % gib(best),
                             "Set dra: true on a server with bigger GPUs")
        if w.sharing in SHARED_MODES:
            demand[w.sharing] += w.replicas
    for mode in SHARED_MODES:
        if demand[mode] > shared[mode]:
            problems.add("gpushare_workloads", "%d %s replicas are wanted but the %s GPUs provide %d"
                         % (demand[mode], mode, mode, shared[mode]), demand[mode], "at most %d" % shared[mode],
                         "Add GPUs with mode %s or raise their replicas" % mode)
    if any(w.sharing == DRA for w in inventory.workloads) and not dra_servers:
        problems.add("gpushare_workloads", "a workload asks for a GPU by attributes (DRA) but no server has dra: true",
                     [w.name for w in inventory.workloads if w.sharing == DRA], "a server with dra: true",
                     "Set gpushare_node.dra: true on the servers the DRA driver should serve")
    if not problems:
        _check_team_demand(inventory, nodes, problems, warnings)
    for team in inventory.teams:
        if team.lending_limit is not None:
            owned = sum(1 for n in nodes for g in n["gpus"] if g["mode"] == WHOLE and g["team"] == team.name)
            if team.lending_limit > owned:
                problems.add(team.path + ".lending_limit", "exceeds the %d whole GPUs the team owns" % owned,
                             team.lending_limit, "0..%d" % owned,
                             "lending_limit counts the team's whole GPUs, in every pool together; lower it")


def _reach(team, owners: dict, teams: dict) -> int:
    """How many whole GPUs of one server (``owners``: owner or None -> count) one replica of
    ``team`` can get: its own, plus, when it borrows, those of the cohort pool and of teams that
    lend (within their lending limits), up to its borrowing limit."""
    own = owners.get(team.name, 0)
    if not team.borrow:
        return own
    lendable = 0
    for owner, count in owners.items():
        other = teams.get(owner)
        if owner is None:
            lendable += count
        elif owner != team.name and other.lend:
            lendable += count if other.lending_limit is None else min(count, other.lending_limit)
    return own + (lendable if team.borrowing_limit is None else min(lendable, team.borrowing_limit))


def _check_runs_in_some_state(inventory: Inventory, base: list[dict], windows: list[dict], problems: Problems) -> None:
    """A whole-GPU or DRA workload one replica of which can be admitted in no state of the day
    (the base state, each window): its team can never reach that many GPUs on one server, owned
    or borrowed, so Kueue would hold it forever. Refused, with each state's best server."""
    teams = {t.name: t for t in inventory.teams}
    states = [("the base state", base)]
    for w in windows:
        changed: dict = {}
        for m in w["nodes"]:
            changed.setdefault(m["name"], m)
        states.append(("window %s (%s-%s)" % (w["name"], w["from"], w["until"]), [changed.get(n["name"], n) for n in base]))
    # Each server's whole-GPU owners counted once per state; the best server once per kind of
    # workload (team, DRA or not, model), not once per workload: 20,000 workloads x 8,000 GPUs.
    servers = []
    for name, nodes in states:
        owned = []
        for n in nodes:
            owners: dict = defaultdict(int)
            for g in n["gpus"]:
                if g["mode"] == WHOLE:
                    owners[g["team"]] += 1
            owned.append((n, owners))
        servers.append((name, owned))
    bests: dict = {}
    for w in inventory.workloads:
        if w.sharing not in (WHOLE, DRA) or w.team not in teams:
            continue
        key = (w.team, w.sharing == DRA, w.gpu_model)
        if key not in bests:
            bests[key] = [(name, max(((_reach(teams[w.team], owners, teams), n["name"]) for n, owners in owned
                                      if n["dra"] == (w.sharing == DRA) and not (w.gpu_model and n["model"] != w.gpu_model)),
                                     default=(0, "no server"))) for name, owned in servers]
        best = bests[key]
        if all(w.gpus > most for _name, (most, _node) in best):
            team = teams[w.team]
            problems.add(w.path + ".gpus", "workload %s needs %d whole GPUs on one server for each replica, and team %s "
                         "reaches that in no state of the day: %s" % (
                             w.name, w.gpus, w.team, "; ".join("%s at most %d (%s)" % (name, most, node)
                                                               for name, (most, node) in best)),
                         w.gpus, "at most %d" % max(most for _name, (most, _node) in best),
                         "Give team %s more whole GPUs on one server (team: %s on a GPU, or in a window), %s, or lower "
                         "gpus (Kueue admits all of a replica's GPUs or none)" % (
                             w.team, w.team, "let it borrow (borrow: true)" if not team.borrow else
                             "raise its borrowing_limit (%d)" % team.borrowing_limit if team.borrowing_limit is not None
                             else "let the teams there lend (lend: true, lending_limit)"))


def _check_team_demand(inventory: Inventory, nodes: list[dict], problems: Problems, warnings: list[str]) -> None:
    """Each team's whole, DRA and shared demand against what it owns plus what it may borrow,
    counted as Kueue counts quota: per GPU model (one ResourceFlavor per model and kind), with
    the teams' borrowing and lending limits. More than that is refused for a team that does
    not borrow (it could never run) and a warning for the others; relying on borrowing at all
    is a warning. MIG slices are carved for their services' teams, so they are left out."""
    owned: dict[tuple[str, str, str | None], int] = defaultdict(int)     # (kind, model, team or None) -> units
    for n in nodes:
        for g in n["gpus"]:
            if g["mode"] == WHOLE:
                owned[(DRA if n["dra"] else WHOLE, n["model"], g["team"])] += 1
            elif g["mode"] in SHARED_MODES:
                owned[(g["mode"], n["model"], g["team"])] += g["replicas"]
    wanted: dict[tuple[str, str], list] = defaultdict(list)              # (team, kind) -> workloads
    for w in inventory.workloads:
        if w.sharing in (WHOLE, DRA) + SHARED_MODES:
            wanted[(w.team, w.sharing)].append(w)
    teams = {t.name: t for t in inventory.teams}

    def lendable(kind: str, model: str, borrower: str) -> int:
        units = owned[(kind, model, None)]          # the cohort's own pool
        for other in inventory.teams:
            if other.name != borrower and other.lend:
                mine = owned[(kind, model, other.name)]
                limited = other.lending_limit is not None and kind in (WHOLE, DRA)
                units += min(mine, other.lending_limit) if limited else mine
        return units

    for (team_name, kind), workloads in sorted(wanted.items()):
        team = teams.get(team_name)
        if team is None:
            continue
        models = sorted({m for (k, m, _t) in owned if k == kind})
        pinned = sorted({w.gpu_model for w in workloads if w.gpu_model})
        # All the team's workloads of this kind against every model, then those pinned to one model.
        scopes = [(tuple(models), workloads)] + [((m,), [w for w in workloads if w.gpu_model == m]) for m in pinned]
        for scope, counted in scopes:
            demand = sum(w.replicas * w.gpus for w in counted)
            own = sum(owned[(kind, m, team.name)] for m in scope)
            may_borrow = 0
            if team.borrow:
                limit = team.borrowing_limit
                may_borrow = sum(min(lendable(kind, m, team.name), limit if limit is not None else 1 << 30)
                                 for m in scope)
            if demand <= own:
                continue
            what = "%d %s %s%s" % (demand, MODES[kind].words, "GPUs" if kind in (WHOLE, DRA) else "replicas",
                                   " on %s" % "/".join(scope) if scope else "")
            names = ", ".join("%s (%d x %d)" % (w.name, w.replicas, w.gpus) for w in counted)
            if not team.borrow:
                problems.add(team.path, "team %s's workloads want %s but it owns %d and does not borrow (borrow: false)"
                             % (team.name, what, own), demand, "at most %d" % own,
                             "Give the team more GPUs (team: %s on a GPU), lower the replicas of %s, or set borrow: "
                             "true" % (team.name, names))
            elif demand > own + may_borrow:
                warnings.append("team %s wants %s but owns %d and may borrow at most %d: %d can never run at once (%s)"
                                % (team.name, what, own, may_borrow, demand - own - may_borrow, names))
            else:
                warnings.append("team %s wants %s but owns %d: the rest must be borrowed" % (team.name, what, own))


# --------------------------------------------------------------------------- quotas

def _capacities(nodes: list[dict], dynamic: dict):
    capacities = dynamic_mig.capacities(dynamic, kueue_quotas.Capacity, kueue_quotas.flavor_name)
    labels: dict[str, dict[str, str]] = {
        kueue_quotas.flavor_name(m, MODES[MIG_DYNAMIC].kueue_kind): {names.GPU_MODEL_LABEL: m, names.DRA_NODE_LABEL: "true"}
        for m in dynamic["gpus"]}
    for n in nodes:
        model = n["model"]
        for g in n["gpus"]:
            if g["mode"] == MIG_DYNAMIC:
                continue            # counted by dynamic_mig.capacities
            kind = MODES[DRA if n["dra"] and g["mode"] == WHOLE else g["mode"]].kueue_kind
            if g["mode"] == WHOLE:
                capacities.append(kueue_quotas.Capacity(kueue_quotas.flavor_name(model, kind), g["resource"], g["team"], 1))
            elif g["mode"] in SHARED_MODES:
                capacities.append(kueue_quotas.Capacity(kueue_quotas.flavor_name(model, kind), g["resource"], g["team"],
                                                        g["replicas"]))
            else:
                for s in g["mig"]["slices"]:
                    resource = CATALOG[model].profile(s["profile"]).resource_name
                    capacities.append(kueue_quotas.Capacity(kueue_quotas.flavor_name(model, kind), resource, s["team"], 1))
            flavor = kueue_quotas.flavor_name(model, kind)
            labels[flavor] = {names.GPU_MODEL_LABEL: model}
            if kind == MODES[DRA].kueue_kind:
                labels[flavor][names.DRA_NODE_LABEL] = "true"
    return capacities, labels


def _gpu_shares(n: dict):
    """(team, fraction of one card) for every owned piece of the node's GPUs."""
    grid = CATALOG[n["model"]].mig_grid
    for g in n["gpus"]:
        if g["mode"] == MIG and g["mig"]["slices"]:
            for s in g["mig"]["slices"]:
                yield s["team"], s["size"] / grid
        else:
            yield g["team"], 1.0


def _cpu_memory(inventory: Inventory, nodes: list[dict], problems: Problems) -> dict:
    """CPU and memory quota in proportion to each team's share of each server's GPUs."""
    if inventory.policy.cpu_memory_quota != "proportional":
        return {}
    totals: dict[str | None, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for node, n in zip(inventory.nodes, nodes):
        if node.cpus is None or node.memory_gib is None:
            problems.add(node.path + (".cpus" if node.cpus is None else ".memory_gib"),
                         "is required when gpushare_policy.cpu_memory_quota is proportional",
                         allowed="the server's %s" % ("CPU count" if node.cpus is None else "memory in GiB"),
                         hint="Add it, or set gpushare_policy.cpu_memory_quota: ignore")
            continue
        for team, fraction in _gpu_shares(n):
            totals[team][0] += node.cpus * fraction / len(node.gpus)
            totals[team][1] += node.memory_gib * fraction / len(node.gpus)
    # Round down so the sum never exceeds the servers' real capacity.
    return {team: (int(c), int(m)) for team, (c, m) in totals.items()}


# --------------------------------------------------------------------------- records

def _team_records(inventory: Inventory, capacities) -> list[dict]:
    owns: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in capacities:
        if c.team:
            owns[c.team]["%s %s" % (c.flavor, c.resource)] += c.count
    return [{"name": t.name, "namespaces": list(t.namespaces), "priority": t.priority, "production": t.production,
             "lend": t.lend, "borrow": t.borrow, "borrowing_limit": t.borrowing_limit,
             "lending_limit": t.lending_limit, "members": list(t.members), "cluster_queue": t.name,
             "local_queue": t.name, "pod_security": t.pod_security,
             "owns": dict(sorted(owns[t.name].items()))} for t in inventory.teams]


def _workload_records(inventory: Inventory, nodes: list[dict], dynamic: dict) -> list[dict]:
    slices = defaultdict(list)
    for n in nodes:
        for g in n["gpus"]:
            for s in (g["mig"] or {}).get("slices", []) if g["mode"] == MIG else []:
                if s["workload"]:
                    slices[s["workload"]].append({"node": n["name"], "gpu": g["index"], "profile": s["profile"],
                                                  "start": s["start"], "replica": s["replica"]})
    records = []
    for w in inventory.workloads:
        record = {"name": w.name, "team": w.team, "kind": w.kind, "sharing": w.sharing, "replicas": w.replicas,
                  "gpus_per_replica": w.gpus, "memory_gib": w.memory_gib, "queue": w.team}
        if w.sharing == MIG:
            record["slices"] = sorted(slices[w.name], key=lambda s: s["replica"])
        if w.sharing == DRA:
            record["claim_template"] = "%s-gpu" % w.name
        if w.sharing == MIG_DYNAMIC:
            record.update({k: v for d in dynamic["workloads"] if d["name"] == w.name for k, v in d.items()
                           if k in ("claim_template", "profile", "charge_mib")})
        records.append(record)
    return records


# --------------------------------------------------------------------------- windows

def _window_names(inventory: Inventory) -> list[str]:
    return sorted({w.name for n in inventory.nodes for g in n.gpus for w in g.windows})


def _inside_window(inventory: Inventory, name: str, base_nodes: list[dict]) -> Inventory:
    """The inventory as it is inside window ``name``: the window's mode replaces the GPU's.
    MIG GPUs the window does not name keep their base layout, so a window switch never
    re-partitions a GPU whose services keep running."""
    base = {(n["name"], g["index"]): g["mig"]["profiles"] for n in base_nodes for g in n["gpus"]
            if g["mode"] == MIG}
    nodes = []
    for node in inventory.nodes:
        gpus = []
        for gpu in node.gpus:
            window = next((w for w in gpu.windows if w.name == name), None)
            if window:
                # Problems of the GPU inside the window point at the window: that is what to fix.
                gpu = dataclasses.replace(gpu, mode=window.mode, team=window.team or gpu.team,
                                          replicas=window.replicas, mig_layout=None, windows=(), path=window.path)
            elif (node.name, gpu.index) in base:
                gpu = dataclasses.replace(gpu, mode=MIG, mig_layout=tuple(sorted(base[(node.name, gpu.index)].items())))
            gpus.append(gpu)
        nodes.append(dataclasses.replace(node, gpus=tuple(gpus)))
    return dataclasses.replace(inventory, nodes=tuple(nodes))


def _plan_window(inventory: Inventory, name: str, base_nodes: list[dict] | None, problems: Problems) -> dict | None:
    """The state inside window ``name``, checked like the base state (model.check_state);
    its problems are added to ``problems`` (then None is returned). Only the servers the
    window changes are checked (the base state's check covers the others); it is planned only
    when the base state was (``base_nodes``; None: the base state has problems)."""
    inside = _inside_window(inventory, name, base_nodes or [])
    window_problems = Problems()
    changed = {n.name for n in inventory.nodes if any(w.name == name for g in n.gpus for w in g.windows)}
    check_state(window_problems, [n for n in inside.nodes if n.name in changed])
    state = None
    if not window_problems and base_nodes is not None:
        try:
            state = _plan_state(inside, window_problems, suffix="-" + name)
        except PlanInvalid:
            pass
    for p in window_problems.items:
        problems.add(p.path, "inside sharing window %s: %s" % (name, p.message), p.value, p.allowed, p.hint)
    if state is None:
        return None
    spec = next(w for n in inventory.nodes for g in n.gpus for w in g.windows if w.name == name)
    return {
        "name": name, "from": spec.start, "until": spec.end,
        "gpus": [{"node": n.name, "index": g.index, "mode": w.mode, "team": w.team or g.team}
                 for n in inventory.nodes for g in n.gpus for w in g.windows if w.name == name],
        "nodes": [n for n in state["nodes"] if n["name"] in changed],
        "kueue": {"objects": [o for o in state["kueue"]["objects"] if o["kind"] in ("ResourceFlavor", "ClusterQueue", "Cohort")]},
        "mig_solve": state["mig_solve"],
    }


def active_window(plan: dict, clock: str) -> dict | None:
    """The window in force at ``clock`` (HH:MM in the plan's time zone), or None for the
    base state. Windows never overlap (model._check_windows), so there is at most one."""
    minute = clock_minutes(clock)
    for window in plan["windows"]:
        if any(start <= minute < end for start, end in window_minutes(window["from"], window["until"])):
            return window
    return None


def local_clock(plan: dict, now: datetime.datetime | None = None) -> str:
    """HH:MM of ``now`` (default: the current time) in the plan's time zone."""
    zone = time_zone(plan["cluster"]["timezone"])
    return (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(zone).strftime("%H:%M")


__all__ = ["build_plan", "active_window", "local_clock", "PlanInvalid", "PLAN_FORMAT"]
