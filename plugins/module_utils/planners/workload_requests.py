# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each workload's pods ask for, read from a Plan: the one place that decides it.

The team manifests (renderers/render_teams) are written from it, and the day-two change list
(changes.plan_changes) compares it between two plans: a pod whose request changes must be
redeployed by its team, so it restarts.

A workload's replicas are split into groups that ask for the same thing: a MIG service's
replicas each get the profile of their slice, and replicas of one service on two GPU models
get two profile names (one Deployment each). A DRA workload (and one whose MIG slice the DRA
driver makes per claim) asks for its ResourceClaimTemplate. A whole-GPU workload asks for
``nvidia.com/gpu`` (its ``gpus_per_replica``); a time-sliced or MPS one for one replica of
the shared resource of its team's GPUs of that mode (the cohort's, then any team's, when its
team owns none: it borrows).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import DRA, MIG, SHARED_MODES, WHOLE


def shared_owners(plan: dict) -> dict[str, dict]:
    """mode -> {owner team or None (the cohort pool) -> the resources of the base state's GPUs
    in that mode}: made once per plan, so each workload's lookup is by key."""
    out: dict[str, dict] = {}
    for n in plan["nodes"]:
        for g in n["gpus"]:
            if g.get("resource"):
                out.setdefault(g["mode"], {}).setdefault(g["team"], set()).add(g["resource"])
    return out


def shared_resources(plan: dict, mode: str, team: str, owners: dict | None = None) -> list[str]:
    """The resources of the base state's GPUs shared in ``mode``: the team's own, else the
    cohort pool's, else any team's (borrowed), in that order of preference. ``owners``:
    shared_owners(plan), made here when not given."""
    by_owner = (shared_owners(plan) if owners is None else owners).get(mode, {})
    for found in (by_owner.get(team), by_owner.get(None), set().union(*by_owner.values())):
        if found:
            return sorted(found)
    return []


def pod_requests(plan: dict) -> dict[str, dict]:
    """workload name -> {"team", "kind", "sharing", "namespace", "queue", "priority_class",
    "groups"}; each group {"replicas": [replica numbers], "resource": name or None, "count":
    per pod, "claim_template": name or None, "profile": MIG profile or None}."""
    teams = {t["name"]: t for t in plan["teams"]}
    owners = shared_owners(plan)
    out = {}
    for w in plan["workloads"]:
        team = teams[w["team"]]
        groups: list[dict] = []
        if w["sharing"] == MIG:
            by_profile: dict[str, list[int]] = {}
            for s in w.get("slices", []):
                by_profile.setdefault(s["profile"], []).append(s["replica"])
            groups = [{"replicas": sorted(r), "resource": names.MIG_RESOURCE_PREFIX + p, "count": 1,
                       "claim_template": None, "profile": p} for p, r in sorted(by_profile.items())]
        elif w["sharing"] == DRA or w.get("claim_template"):
            # A DRA claim: a whole GPU by attributes, or a MIG slice the DRA driver makes per claim.
            groups = [{"replicas": list(range(w["replicas"])), "resource": None, "count": w["gpus_per_replica"],
                       "claim_template": w["claim_template"], "profile": w.get("profile")}]
        elif w["sharing"] == WHOLE:
            groups = [{"replicas": list(range(w["replicas"])), "resource": names.GPU_RESOURCE,
                       "count": w["gpus_per_replica"], "claim_template": None, "profile": None}]
        elif w["sharing"] in SHARED_MODES:
            found = shared_resources(plan, w["sharing"], w["team"], owners)
            groups = [{"replicas": list(range(w["replicas"])), "resource": found[0] if found else None, "count": 1,
                       "claim_template": None, "profile": None}]
        out[w["name"]] = {"team": w["team"], "kind": w["kind"], "sharing": w["sharing"],
                          "namespace": team["namespaces"][0], "queue": w["queue"],
                          # kueue_quotas names each team's WorkloadPriorityClass after the team.
                          "priority_class": w["team"], "groups": groups}
    return out


def replica_requests(plan: dict) -> dict[tuple[str, int], dict]:
    """(workload, replica) -> what that pod asks for: team, namespace, queue, sharing,
    resource, count, claim_template."""
    out = {}
    for name, req in pod_requests(plan).items():
        for group in req["groups"]:
            for replica in group["replicas"]:
                out[(name, replica)] = {"team": req["team"], "namespace": req["namespace"], "queue": req["queue"],
                                        "sharing": req["sharing"], "resource": group["resource"],
                                        "count": group["count"], "claim_template": group["claim_template"]}
    return out


__all__ = ["pod_requests", "replica_requests", "shared_owners", "shared_resources"]
