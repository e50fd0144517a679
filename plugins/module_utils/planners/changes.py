# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two: the previous plan as the current state, and what a new plan changes against it.

The previous plan (``plan.json`` of the last run, in the artifacts directory) says how every
GPU is partitioned now; the MIG planner keeps those partitions where it can (mig_planner's
stable re-planning). ``plan_changes`` then lists, before anything is applied, every GPU whose
MIG partition changes (each one is drained by the MIG Manager: NVIDIA/gpu-operator#262), the
service replicas that move to another slice, and the quotas and node labels that change.
"""

from __future__ import annotations

import json

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG
from ansible_collections.gpushare.cluster.plugins.module_utils.names import PLAN_FORMAT


class PreviousPlanError(Exception):
    """The previous plan cannot be used as the current state; the message says why."""


def parse_previous(text: str, cluster_name: str) -> dict:
    """The previous plan from the text of its plan.json, checked to be a complete plan of this
    format and of the cluster ``cluster_name``; PreviousPlanError otherwise."""
    try:
        plan = json.loads(text)
    except ValueError as err:
        raise PreviousPlanError("not valid JSON (%s)" % err) from None
    if not isinstance(plan, dict) or "format" not in plan:
        raise PreviousPlanError("not a plan of gpushare.cluster (no 'format' key)")
    if plan["format"] != PLAN_FORMAT:
        raise PreviousPlanError("a plan of format %r; this collection reads %r" % (plan["format"], PLAN_FORMAT))
    name = (plan.get("cluster") or {}).get("name")
    if name != cluster_name:
        raise PreviousPlanError("the plan of cluster %r, while the inventory plans cluster %r "
                                "(gpushare_policy.cluster_name)" % (name, cluster_name))
    try:
        current_partitions(plan)
        _quotas(plan), _labels(plan)
    except (KeyError, TypeError, AttributeError) as err:
        raise PreviousPlanError("not a complete plan (%r missing or malformed)" % err) from None
    return plan


def partition(gpu: dict) -> tuple[tuple[str, int], ...] | None:
    """A plan GPU's MIG partition as sorted (profile, count) pairs; None when MIG is off."""
    mig = gpu.get("mig")
    return tuple(sorted(mig["profiles"].items())) if mig else None


def current_partitions(plan: dict) -> dict[tuple[str, int], dict]:
    """(node, index) -> how the GPU is cut now, as mig_planner.MigCandidate's ``current``
    (partition or None) and ``current_slices`` ((profile, start, workload, replica) each)."""
    def slices(gpu: dict) -> tuple:
        return tuple((s["profile"], s["start"], s["workload"], s["replica"])
                     for s in (gpu["mig"] or {}).get("slices", ()))
    return {(node["name"], gpu["index"]): {"current": partition(gpu), "current_slices": slices(gpu)}
            for node in plan["nodes"] for gpu in node["gpus"]}


def _describe(gpu: dict | None) -> str:
    if gpu is None:
        return "absent"
    counts = partition(gpu)
    cut = " + ".join("%d x %s" % (n, p) for p, n in counts) if counts else ""
    if gpu["mode"] == MIG:
        return "MIG " + (cut or "unpartitioned")
    return gpu["mode"] + (" (MIG %s)" % cut if cut else "")


def _placements(plan: dict) -> dict[tuple[str, int], str]:
    """(workload, replica) -> where its MIG slice is."""
    return {(s["workload"], s["replica"]): "%s GPU %d %s@%d" % (node["name"], gpu["index"], s["profile"], s["start"])
            for node in plan["nodes"] for gpu in node["gpus"]
            for s in (gpu["mig"] or {}).get("slices", ()) if s["workload"]}


def _gpus(plan: dict) -> dict[tuple[str, int], dict]:
    return {(node["name"], gpu["index"]): gpu for node in plan["nodes"] for gpu in node["gpus"]}


def _quotas(plan: dict) -> dict[tuple[str, str], int]:
    return {(team["name"], key): count for team in plan["teams"] for key, count in team["owns"].items()}


def _labels(plan: dict) -> dict[tuple[str, str], str]:
    return {(node["name"], key): value for node in plan["nodes"] for key, value in node["labels"].items()}


def known_labels(plan: dict | None) -> dict[str, dict[str, list[str]]]:
    """node -> label -> the values ``plan`` gives it in its base state or any window: what the
    collection itself may have set on the live node (anything else there was set by hand)."""
    known: dict = {}
    for node in (plan or {}).get("nodes", []) + [n for w in (plan or {}).get("windows", []) for n in w["nodes"]]:
        for key, value in node["labels"].items():
            values = known.setdefault(node["name"], {}).setdefault(key, [])
            if value not in values:
                values.append(value)
    return known


def plan_changes(previous: dict | None, new: dict, replan: str = "stable") -> dict:
    """What ``new`` changes against ``previous`` (None: the first plan, everything is new)."""
    if previous is None:
        return {"previous": False, "replan": replan, "repartitioned": [], "gpus": [], "moved": [], "placed": [],
                "freed": [], "quotas": [], "labels": [], "known_labels": {}}
    old_gpus, new_gpus = _gpus(previous), _gpus(new)
    gpus, repartitioned = [], []
    for key in sorted(set(old_gpus) | set(new_gpus)):
        old, now = old_gpus.get(key), new_gpus.get(key)
        recut = old is not None and now is not None and partition(old) != partition(now)
        if recut:
            repartitioned.append("%s GPU %d" % key)
        if (_describe(old), (old or {}).get("team")) != (_describe(now), (now or {}).get("team")):
            gpus.append({"node": key[0], "gpu": key[1], "old": _describe(old), "new": _describe(now),
                         "old_team": (old or {}).get("team"), "new_team": (now or {}).get("team"),
                         "repartitioned": recut})
    old_at, new_at = _placements(previous), _placements(new)
    moved = [{"workload": w, "replica": r, "old": old_at[(w, r)], "new": new_at[(w, r)]}
             for (w, r) in sorted(set(old_at) & set(new_at)) if old_at[(w, r)] != new_at[(w, r)]]
    placed = [{"workload": w, "replica": r, "new": new_at[(w, r)]} for (w, r) in sorted(set(new_at) - set(old_at))]
    freed = [{"workload": w, "replica": r, "old": old_at[(w, r)]} for (w, r) in sorted(set(old_at) - set(new_at))]
    return {"previous": True, "replan": replan, "repartitioned": repartitioned, "gpus": gpus, "moved": moved,
            "placed": placed, "freed": freed,
            "quotas": _differences(_quotas(previous), _quotas(new), ("team", "resource")),
            "labels": _differences(_labels(previous), _labels(new), ("node", "label")),
            "known_labels": known_labels(previous)}


def _differences(old: dict, new: dict, names: tuple[str, str]) -> list[dict]:
    return [{names[0]: key[0], names[1]: key[1], "old": old.get(key), "new": new.get(key)}
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def change_lines(changes: dict) -> list[str]:
    """plan.yml's short table of what the plan changes."""
    if not changes["previous"]:
        return ["Changes: first plan of this cluster (no previous plan.json): every GPU is configured as planned"]
    if not any(changes[k] for k in ("gpus", "moved", "placed", "freed", "quotas", "labels")):
        return ["Changes: none against the previous plan"]
    lines = ["Changes against the previous plan (replan: %s): %d GPU(s) re-partitioned (each drained), "
             "%d replica(s) moved" % (changes["replan"], len(changes["repartitioned"]), len(changes["moved"]))]
    for g in changes["gpus"]:
        lines.append("  %-10s GPU %-3d %s -> %s%s%s" % (
            g["node"], g["gpu"], g["old"], g["new"],
            "" if g["old_team"] == g["new_team"] else "  (team %s -> %s)" % (g["old_team"], g["new_team"]),
            "  [re-partitioned: drained]" if g["repartitioned"] else ""))
    for m in changes["moved"]:
        lines.append("  %s replica %d moves: %s -> %s" % (m["workload"], m["replica"], m["old"], m["new"]))
    for m in changes["placed"]:
        lines.append("  %s replica %d is placed on %s" % (m["workload"], m["replica"], m["new"]))
    for m in changes["freed"]:
        lines.append("  %s replica %d leaves %s" % (m["workload"], m["replica"], m["old"]))
    for q in changes["quotas"]:
        lines.append("  quota %s %s: %s -> %s" % (q["team"], q["resource"], q["old"] or 0, q["new"] or 0))
    for label in changes["labels"]:
        lines.append("  label %s %s: %s -> %s" % (label["node"], label["label"], label["old"], label["new"]))
    return lines
