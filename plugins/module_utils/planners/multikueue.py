# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manager's Plan of a MultiKueue setup: one queue per team over several clusters.

Each worker cluster is planned as site.yml plans one cluster (plan.py, through the plan
module); this planner takes those plans and makes the manager's (Kueue v0.19 docs
concepts/multikueue.md, tasks/manage/setup_multikueue.md):

* the teams' ClusterQueues and LocalQueues with the same names and namespaces as on the
  workers (Kueue dispatches a job to the LocalQueue of the same name in the same namespace
  of each worker), each naming the MultiKueue AdmissionCheck under
  ``admissionChecksStrategy``;
* quota per team and resource = the sum of what the workers' state in force gives that team
  (the cohort's own pool likewise), on one ResourceFlavor without node labels: the manager
  runs no pods, it only decides whether a job may be dispatched;
* the worker clusters the MultiKueueConfig lists, and Kueue's ``multiKueue`` configuration
  (``workerLostTimeout``).

A team of the manager must exist on every worker with every one of its namespaces;
otherwise its jobs could be dispatched to a worker without the queue.
"""

from __future__ import annotations

import re
from collections import defaultdict

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.clusters import MultiKueue
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import Problems
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import admission, kueue_quotas

GIB = re.compile(r"^([0-9]+)Gi$")


def plan_manager(spec: MultiKueue, worker_results: dict[str, dict]) -> dict:
    """The manager's Plan (the shape of plan.py's, with no nodes) from the workers' plan
    module results (name -> {plan, manifests}). Raises PlanInvalid when a worker lacks a
    team or namespace of the manager."""
    problems = Problems()
    for worker in spec.workers:
        _check_teams(problems, spec, worker, worker_results[worker.name]["plan"])
    problems.raise_if_any()
    owned: dict[tuple[str | None, str], int] = defaultdict(int)
    for worker in spec.workers:
        for (team, resource), amount in _worker_quotas(worker_results[worker.name]["manifests"]["kueue"]).items():
            owned[(team, resource)] += amount
    team_names = {t.name for t in spec.teams}
    resources = sorted({r for (_t, r) in owned})
    capacities = [kueue_quotas.Capacity(flavor=names.MULTIKUEUE_NAME, resource=r, team=t, count=n)
                  for (t, r), n in sorted(owned.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
                  if t is None or t in team_names]
    # Every team covers every resource (kueue_quotas' rule), so a team with nothing somewhere still lends and borrows.
    capacities += [kueue_quotas.Capacity(names.MULTIKUEUE_NAME, r, t, 0) for t in sorted(team_names) for r in resources
                   if (t, r) not in owned]
    dra_in_use = any(worker_results[w.name]["plan"]["dra"]["claim_templates"] for w in spec.workers)
    kueue = kueue_quotas.plan_kueue(spec.teams, spec.policy, capacities, {}, {names.MULTIKUEUE_NAME: {}}, dra_in_use)
    for obj in kueue["objects"]:
        if obj["kind"] == "ResourceFlavor":
            obj["spec"] = {}    # no node labels or tolerations: no pod runs on the manager
        elif obj["kind"] == "ClusterQueue":
            obj["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": names.MULTIKUEUE_NAME}]}
    covers_cpu_memory = any(r in ("cpu", "memory") for r in resources)
    kueue["configuration"] = kueue_quotas.configuration(covers_cpu_memory, dra_in_use)
    if spec.worker_lost_timeout:
        kueue["configuration"]["multiKueue"] = {"workerLostTimeout": spec.worker_lost_timeout}
    quotas = {t.name: {r: owned.get((t.name, r), 0) for r in resources} for t in spec.teams}
    return {
        "format": names.PLAN_FORMAT,
        "cluster": {"name": spec.manager.name, "kubernetes_distribution": spec.policy.distribution,
                    "cohort": spec.policy.cohort, "mig_leftover": spec.policy.mig_leftover,
                    "cpu_memory_quota": "proportional" if covers_cpu_memory else "ignore",
                    "allow_disruption": spec.policy.allow_disruption, "timezone": spec.policy.timezone},
        "teams": [{"name": t.name, "namespaces": list(t.namespaces), "priority": t.priority, "production": t.production,
                   "lend": t.lend, "borrow": t.borrow, "borrowing_limit": t.borrowing_limit,
                   "lending_limit": t.lending_limit, "members": list(t.members), "cluster_queue": t.name,
                   "local_queue": t.name, "pod_security": t.pod_security, "owns": quotas[t.name]} for t in spec.teams],
        "nodes": [],
        "workloads": [],
        "kueue": kueue,
        "dra": {"claim_templates": [], "nodes": []},
        "windows": [],
        # Teams submit on the manager: their namespaces are governed as on a worker, a GPU
        # meaning any resource a worker advertises in any of its states.
        "admission": admission.plan_admission(spec.teams, kueue["objects"], [
            nodes for w in spec.workers for nodes in _node_states(worker_results[w.name]["plan"])]),
        "warnings": [],
        "mig_solve": None,
        "multikueue": {
            "manager": spec.manager.as_dict(),
            "workers": [w.as_dict() for w in spec.workers],
            "admission_check": names.MULTIKUEUE_NAME,
            "worker_lost_timeout": spec.worker_lost_timeout,
        },
    }


def _node_states(plan: dict) -> list[list[dict]]:
    """A worker's node records in its base state and inside each window."""
    return [plan["nodes"]] + [w["nodes"] for w in plan["windows"]]


def _check_teams(problems: Problems, spec: MultiKueue, worker, plan: dict) -> None:
    teams = {t["name"]: t for t in plan["teams"]}
    where = "%s (group %s)" % (worker.path, worker.group)
    for team in spec.teams:
        there = teams.get(team.name)
        if there is None:
            problems.add(where, "has no team %s" % team.name, sorted(teams), "every team of the manager (%s)" % team.path,
                         "Kueue dispatches a job to the worker's LocalQueue of the same name and namespace: add the "
                         "team to this group's gpushare_teams, or remove it from the manager's")
            continue
        missing = [ns for ns in team.namespaces if ns not in there["namespaces"]]
        if missing:
            problems.add(where, "team %s has no namespace %s on this worker" % (team.name, ", ".join(missing)),
                         there["namespaces"], "every namespace of %s.namespaces" % team.path,
                         "Kueue needs the same namespaces and LocalQueue names on every worker: add the namespace "
                         "to the team in this group's gpushare_teams, or remove it from the manager's")


def _worker_quotas(objects: list[dict]) -> dict[tuple[str | None, str], int]:
    """(team, resource) -> nominal quota summed over flavors, from a worker's ClusterQueues
    (named after their team) and its Cohort (team None: GPUs no team owns)."""
    out: dict[tuple[str | None, str], int] = defaultdict(int)
    for obj in objects:
        if obj["kind"] not in ("ClusterQueue", "Cohort"):
            continue
        team = obj["metadata"]["name"] if obj["kind"] == "ClusterQueue" else None
        for group in obj["spec"].get("resourceGroups") or []:
            for flavor in group["flavors"]:
                for resource in flavor["resources"]:
                    out[(team, resource["name"])] += _count(resource["nominalQuota"])
    return out


def _count(quantity) -> int:
    """A quota the planners write: an integer, or memory as "<n>Gi" (counted in GiB)."""
    if isinstance(quantity, int):
        return quantity
    match = GIB.match(str(quantity))
    if not match:
        raise ValueError("unexpected quota %r in a worker's plan" % (quantity,))
    return int(match.group(1))
