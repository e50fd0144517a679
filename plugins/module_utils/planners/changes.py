# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Day two: the applied plan as the current state, and what a new plan changes against it.

The previous plan is the one last applied (``applied-plan.json`` in the plan directory,
written by site.yml once it has applied a plan; before that the ``plan.json`` a run replaces,
which the plan module then keeps as ``applied-plan.json``), so the changes stay listed,
run after run, until they are applied. It says how every GPU is partitioned now; the MIG
planner keeps those partitions where it can (mig_planner's stable re-planning).
``plan_changes`` then lists, before anything is applied:

* every GPU that is re-cut (its MIG partition differs: MIG switched on or off, or other
  profile counts), each applied as RECUT_STEPS says;
* every pod (workload replica) that restarts, with why: it is on a re-cut GPU, or what it
  asks for changes (a new resource, team or sharing mode), and then the manifest change its
  team must make. A replica whose slice assignment changes while its GPU keeps its partition
  and its resource stays is not listed: the device plugin does not move a running pod;
* pods that start (new replicas) or end (replicas removed), quotas and node labels.
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG, MIG_DYNAMIC
from ansible_collections.gpushare.cluster.plugins.module_utils.names import MIG_RESOURCE_PREFIX, PLAN_FORMAT
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.workload_requests import replica_requests

# The plan directory's record of the plan last applied (site.yml writes it after applying).
APPLIED_PLAN = "applied-plan.json"
PLAN_FILE = "plan.json"
# What happens to a re-cut GPU (gpu_operator role, node_labels.yml): the one wording of the
# output, the docs and ansible-doc.
RECUT_STEPS = ("cordon the node, evict the pods on the GPU (deleted, so PodDisruptionBudgets are not honoured), "
               "re-cut it, uncordon")
# Why a pod restarts.
ON_RECUT_GPU, NEW_RESOURCE, TEAM_CHANGED, MODE_CHANGED, GPU_REMOVED = (
    "re-cut GPU", "new resource", "team changed", "mode changed", "GPU removed")


class PreviousPlanError(Exception):
    """The previous plan cannot be used as the current state; the message says why."""


def previous_plan_path(dest: str) -> str:
    """The plan changes are listed against, under the plan directory ``dest``: the applied
    plan when one is recorded, else the last plan written."""
    applied = os.path.join(dest, APPLIED_PLAN)
    return applied if os.path.exists(applied) else os.path.join(dest, PLAN_FILE)


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
        replica_requests(plan)
    except (KeyError, TypeError, AttributeError, IndexError) as err:
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


def _slices(plan: dict) -> dict[tuple[str, int], tuple[str, int, str, int]]:
    """(workload, replica) -> (node, GPU index, profile, start) of its MIG slice."""
    return {(s["workload"], s["replica"]): (node["name"], gpu["index"], s["profile"], s["start"])
            for node in plan["nodes"] for gpu in node["gpus"]
            for s in (gpu["mig"] or {}).get("slices", ()) if s["workload"] and gpu["mode"] == MIG}


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


def gpu_name(key: tuple[str, int]) -> str:
    return "%s GPU %d" % key


def _where(req: dict, placed: tuple | None) -> str:
    if placed:
        return "%s GPU %d %s@%d" % placed
    if req["claim_template"]:
        return "ResourceClaimTemplate %s" % req["claim_template"]
    return "%d x %s" % (req["count"], req["resource"])


def _asks(req: dict) -> str:
    return ("ResourceClaimTemplate %s" % req["claim_template"]) if req["claim_template"] else \
        "%s: %d" % (req["resource"], req["count"])


def _manifest_change(old: dict, new: dict) -> str | None:
    """What the team changes in the pod's manifest (teams/<team>/<workload>.yaml), or None."""
    parts = []
    if old["namespace"] != new["namespace"]:
        parts.append("namespace %s instead of %s" % (new["namespace"], old["namespace"]))
    if old["queue"] != new["queue"]:
        parts.append("label kueue.x-k8s.io/queue-name: %s instead of %s" % (new["queue"], old["queue"]))
    if _asks(old) != _asks(new):
        parts.append("ask for %s instead of %s" % (_asks(new), _asks(old)))
    return "; ".join(parts) or None


def _restart(key, old_req, new_req, old_at, new_at, recut, gone, old_gpus) -> dict | None:
    """Why pod ``key`` restarts (a list of {"why", "text"}), or None when it keeps running."""
    reasons, certain = [], True
    if old_req["team"] != new_req["team"]:
        reasons.append({"why": TEAM_CHANGED, "text": "team %s -> %s" % (old_req["team"], new_req["team"])})
    if old_req["sharing"] != new_req["sharing"]:
        reasons.append({"why": MODE_CHANGED, "text": "sharing %s -> %s" % (old_req["sharing"], new_req["sharing"])})
    if _asks(old_req) != _asks(new_req):
        reasons.append({"why": NEW_RESOURCE, "text": "%s -> %s" % (_asks(old_req), _asks(new_req))})
    here = old_at.get(key)
    if here is not None:
        gpu = here[:2]
        if gpu in recut:
            same = new_at.get(key)
            text = "on %s, which is re-cut" % gpu_name(gpu)
            if same is not None and same[:3] == here[:3]:
                text += "; restarts in place (same GPU and profile)"
            reasons.append({"why": ON_RECUT_GPU, "text": text})
        elif gpu in gone:
            reasons.append({"why": GPU_REMOVED, "text": "on %s, which the new plan no longer has" % gpu_name(gpu)})
    elif old_req["resource"]:
        # Not a MIG slice: the device plugin does not say which GPU a pod got, so a pod
        # asking for what a re-cut GPU served may be on it (as the gpu_operator role counts it).
        serving = sorted(k for k in recut | gone if old_req["resource"] in _served(old_gpus[k]))
        if serving:
            certain = bool(reasons)
            reasons.append({"why": ON_RECUT_GPU if set(serving) & recut else GPU_REMOVED,
                            "text": "if it runs on %s (%s), which %s" % (
                                " or ".join(gpu_name(k) for k in serving), old_req["resource"],
                                "is re-cut" if set(serving) & recut else "the new plan no longer has")})
    if not reasons:
        return None
    manifest = _manifest_change(old_req, new_req)
    return {"workload": key[0], "replica": key[1], "team": old_req["team"], "new_team": new_req["team"],
            "reasons": reasons, "certain": certain, "old": _where(old_req, here), "new": _where(new_req, new_at.get(key)),
            "manifest": manifest,
            # The team's manifest to redeploy (renderers/render_teams writes it).
            "manifest_file": "teams/%s/%s.yaml" % (new_req["team"], key[0]) if manifest else None}


def _served(gpu: dict) -> set[str]:
    """The device-plugin resources a plan GPU serves."""
    if gpu.get("resource"):
        return {gpu["resource"]}
    return {MIG_RESOURCE_PREFIX + s["profile"] for s in (gpu.get("mig") or {}).get("slices", ())}


def plan_changes(previous: dict | None, new: dict, replan: str = "stable", against: dict | None = None) -> dict:
    """What ``new`` changes against ``previous`` (None: the first plan, everything is new).
    ``against``: what names the previous plan (its file and sha256), kept in the result."""
    if previous is None:
        return {"previous": False, "against": None, "replan": replan, "repartitioned": [], "gpus": [],
                "restarts": [], "started": [], "ended": [], "quotas": [], "labels": [], "known_labels": {}}
    old_gpus, new_gpus = _gpus(previous), _gpus(new)
    gpus, repartitioned, recut = [], [], set()
    for key in sorted(set(old_gpus) | set(new_gpus)):
        old, now = old_gpus.get(key), new_gpus.get(key)
        # Partitions, not modes: a GPU that stays in MIG mode with other profiles is re-cut too.
        # A GPU that stays mig-dynamic never is: the DRA driver makes its slices per claim.
        is_recut = old is not None and now is not None and partition(old) != partition(now) \
            and not old["mode"] == now["mode"] == MIG_DYNAMIC
        if is_recut:
            repartitioned.append(gpu_name(key))
            recut.add(key)
        if (_describe(old), (old or {}).get("team")) != (_describe(now), (now or {}).get("team")):
            gpus.append({"node": key[0], "gpu": key[1], "old": _describe(old), "new": _describe(now),
                         "old_team": (old or {}).get("team"), "new_team": (now or {}).get("team"),
                         "repartitioned": is_recut})
    gone = set(old_gpus) - set(new_gpus)
    old_req, new_req = replica_requests(previous), replica_requests(new)
    old_at, new_at = _slices(previous), _slices(new)
    restarts = [r for r in (_restart(key, old_req[key], new_req[key], old_at, new_at, recut, gone, old_gpus)
                            for key in sorted(set(old_req) & set(new_req))) if r]
    started = [{"workload": w, "replica": r, "team": new_req[(w, r)]["team"], "new": _where(new_req[(w, r)], new_at.get((w, r)))}
               for (w, r) in sorted(set(new_req) - set(old_req))]
    ended = [{"workload": w, "replica": r, "team": old_req[(w, r)]["team"], "old": _where(old_req[(w, r)], old_at.get((w, r)))}
             for (w, r) in sorted(set(old_req) - set(new_req))]
    return {"previous": True, "against": against, "replan": replan, "repartitioned": repartitioned, "gpus": gpus,
            "restarts": restarts, "started": started, "ended": ended,
            "dynamic_mig": _dynamic(old_gpus, new_gpus),
            "quotas": _differences(_quotas(previous), _quotas(new), ("team", "resource")),
            "labels": _differences(_labels(previous), _labels(new), ("node", "label")),
            "known_labels": known_labels(previous)}


def _dynamic(old_gpus: dict, new_gpus: dict) -> dict:
    """The GPUs mig-dynamic in both plans (never re-cut, drained or evicted: a resized service's
    own pods take slices of the new profile as they restart), and the GPUs that move from a
    static layout to dynamic MIG (docs/dynamic-mig.md: apply them as whole GPUs first, so the MIG
    Manager removes their instances)."""
    return {"kept": [gpu_name(k) for k in sorted(set(old_gpus) & set(new_gpus))
                     if old_gpus[k]["mode"] == new_gpus[k]["mode"] == MIG_DYNAMIC],
            "from_static": [gpu_name(k) for k in sorted(set(old_gpus) & set(new_gpus))
                            if new_gpus[k]["mode"] == MIG_DYNAMIC and partition(old_gpus[k])]}


def against(path: str | None, text: str) -> dict:
    """What names a previous plan: its file and the sha256 of its text."""
    return {"file": path, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def _differences(old: dict, new: dict, names: tuple[str, str]) -> list[dict]:
    return [{names[0]: key[0], names[1]: key[1], "old": old.get(key), "new": new.get(key)}
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def has_changes(changes: dict) -> bool:
    return any(changes[k] for k in ("gpus", "restarts", "started", "ended", "quotas", "labels"))


def recorded_against(changes: dict) -> dict:
    """What names the previous plan in the files and output: pending changes read from the last
    plan.json are kept as applied-plan.json beside it (renderers.plan_files), so they are named
    by that file, as the next run, which reads it there, names them: an unchanged rerun then
    writes the same changes.md and changes.json."""
    a = dict(changes.get("against") or {})
    if a.get("file") and os.path.basename(a["file"]) == PLAN_FILE and has_changes(changes):
        a["file"] = os.path.join(os.path.dirname(a["file"]), APPLIED_PLAN)
    return a


def _against_text(changes: dict) -> str:
    a = recorded_against(changes)
    return "%s (sha256 %s)" % (a.get("file") or "the previous plan", (a.get("sha256") or "?")[:12])


def restart_line(r: dict) -> str:
    """``speech-to-text replica 0: new resource: ... -> ...; redeploy teams/production/speech-to-text.yaml (...)``."""
    return "%s replica %d%s: %s%s" % (
        r["workload"], r["replica"], "" if r["certain"] else " (may restart)",
        "; ".join("%s: %s" % (x["why"], x["text"]) for x in r["reasons"]),
        "; redeploy %s (%s)" % (r["manifest_file"], r["manifest"]) if r["manifest"] else "")


def by_team(changes: dict) -> dict[str, dict]:
    """team -> {"restarts", "started", "ended"} of its pods (a pod that changes team is its new team's)."""
    teams: dict = {}
    for r in changes["restarts"]:
        teams.setdefault(r["new_team"], {"restarts": [], "started": [], "ended": []})["restarts"].append(r)
    for what in ("started", "ended"):
        for r in changes[what]:
            teams.setdefault(r["team"], {"restarts": [], "started": [], "ended": []})[what].append(r)
    return dict(sorted(teams.items()))


def dynamic_lines(changes: dict) -> list[str]:
    """What the change does to mig-dynamic GPUs, in the change list's words."""
    dynamic = changes.get("dynamic_mig") or {}
    lines = []
    if dynamic.get("kept"):
        lines.append("  dynamic MIG (%s): never re-cut; nothing cordoned or evicted; only ResourceClaimTemplates and "
                     "quotas change, and a resized service's own pods take new slices as they restart"
                     % ", ".join(dynamic["kept"]))
    for gpu in dynamic.get("from_static", []):
        lines.append("  %s: static MIG layout -> dynamic MIG: apply it as a whole GPU first (mode: whole, dra: false), "
                     "so the MIG Manager removes its instances, then make it mig-dynamic" % gpu)
    return lines


def change_lines(changes: dict) -> list[str]:
    """plan.yml's short list of what the plan changes."""
    if not changes["previous"]:
        return ["Changes: first plan of this cluster (no previous plan.json): every GPU is configured as planned"]
    if not has_changes(changes):
        return ["Changes: none against %s" % _against_text(changes)]
    lines = ["Changes against %s, not applied yet (replan: %s): %d GPU(s) re-cut (each: %s), %d pod(s) restart"
             % (_against_text(changes), changes["replan"], len(changes["repartitioned"]), RECUT_STEPS,
                len(changes["restarts"]))]
    for g in changes["gpus"]:
        lines.append("  %-10s GPU %-3d %s -> %s%s%s" % (
            g["node"], g["gpu"], g["old"], g["new"],
            "" if g["old_team"] == g["new_team"] else "  (team %s -> %s)" % (g["old_team"], g["new_team"]),
            "  [re-cut]" if g["repartitioned"] else ""))
    for team, mine in by_team(changes).items():
        for r in mine["restarts"]:
            lines.append("  team %s: %s" % (team, restart_line(r)))
        for r in mine["started"]:
            lines.append("  team %s: %s replica %d starts on %s" % (team, r["workload"], r["replica"], r["new"]))
        for r in mine["ended"]:
            lines.append("  team %s: %s replica %d ends (was on %s)" % (team, r["workload"], r["replica"], r["old"]))
    lines += dynamic_lines(changes)
    for q in changes["quotas"]:
        lines.append("  quota %s %s: %s -> %s" % (q["team"], q["resource"], q["old"] or 0, q["new"] or 0))
    for label in changes["labels"]:
        lines.append("  label %s %s: %s -> %s" % (label["node"], label["label"], label["old"], label["new"]))
    return lines
