# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kueue v1beta2 objects from what each team owns (Kueue v0.19.2: apis/kueue/v1beta2,
config/components/crd/bases, site/content/en/docs/concepts).

* One ResourceFlavor per GPU pool (model x how it is shared), matching the node label
  ``gpushare.cluster/gpu-model`` that the roles set.
* One ClusterQueue per team in one cohort. Nominal quota is what the team owns, so the
  sum over teams is exactly what exists; GPUs no team owns are the Cohort's own pool.
  Every queue covers every pool (nominal 0 where it owns nothing) because Kueue only
  lends a flavor/resource pair to a queue that declares it.
* Production: ``reclaimWithinCohort: Any`` takes lent GPUs back at once from any
  borrower. Other teams: ``LowerPriority``, so they reclaim from each other but never
  evict production's higher-priority work.
* CPU and memory: either not covered at all with ``quotaCheckStrategy: IgnoreUndeclared``
  or given to each team in proportion to its GPUs. Covering them with too little quota
  silently blocks GPU reclaim (kueue issues #4028, #7393).
* Resource groups are the connected components of flavor<->resource, so a resource or a
  flavor appears in exactly one group and each flavor lists every covered resource in the
  group's order (the CRD's CEL rule and the webhook's validateResourceGroups).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.names import MANAGED_LABEL  # noqa: F401 (re-exported)

API = "kueue.x-k8s.io/v1beta2"
CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
CPU_MEMORY_FLAVOR = "cpu-memory"
# What a team's lending_limit counts: whole GPUs, through the device plugin or DRA.
WHOLE_GPU_RESOURCES = (names.GPU_RESOURCE, names.DRA_RESOURCE)
# Integrations on by default in v0.19 plus PyTorchJob, which v0.19 turned off by default
# (kubernetes-sigs/kueue commit 6cdcd3828d, config/components/manager/controller_manager_config.yaml).
FRAMEWORKS = ["batch/job", "kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "ray.io/rayjob", "ray.io/raycluster",
              "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod", "deployment", "statefulset",
              "leaderworkerset.x-k8s.io/leaderworkerset"]


@dataclass(frozen=True)
class Capacity:
    """``count`` units of ``resource`` in pool ``flavor``, owned by ``team`` (None: the cohort)."""
    flavor: str
    resource: str
    team: str | None
    count: int
    unit: str = ""          # the quantity's suffix ("Mi": dynamic MIG's memory counter)
    per_gpu: int = 1        # units in one GPU, for borrowing limits counted in GPUs


def flavor_name(model: str, kind: str) -> str:
    return "%s-%s" % (model, kind)


def _meta(name: str, namespace: str | None = None) -> dict:
    meta = {"name": name, "labels": dict(MANAGED_LABEL)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _groups(capacities: list[Capacity], extra: list[tuple[str, str]]) -> list[tuple[list[str], list[str]]]:
    """(covered resources, flavors) per connected component, deterministic order."""
    edges = {(c.flavor, c.resource) for c in capacities} | set(extra)
    parent: dict[str, str] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for flavor, resource in edges:
        parent[find("f:" + flavor)] = find("r:" + resource)
    groups: dict[str, tuple[set, set]] = defaultdict(lambda: (set(), set()))
    for flavor, resource in edges:
        resources, flavors = groups[find("r:" + resource)]
        resources.add(resource)
        flavors.add(flavor)
    ordered = [(sorted(r), sorted(f)) for r, f in groups.values()]
    # cpu/memory first, as a person reads a ClusterQueue; then by first resource name.
    return sorted(ordered, key=lambda g: (g[0][0] not in ("cpu", "memory"), g[0][0]))


def _quantity(value) -> object:
    return value if isinstance(value, str) else int(value)


def plan_kueue(teams, policy, capacities: list[Capacity], cpu_memory: dict[str | None, tuple[int, int]],
               flavor_labels: dict[str, dict[str, str]], dra_in_use: bool, device_class_mappings=()) -> dict:
    """All Kueue objects and the controller configuration, as plain dicts.

    ``cpu_memory`` maps team (None for the cohort pool) to (cpus, memory GiB) when the
    policy gives CPU and memory quota; it is empty under ``ignore``.
    """
    production = next((t for t in teams if t.production), None)
    owned: dict[tuple[str | None, str, str], int] = defaultdict(int)
    units = {(c.flavor, c.resource): (c.unit, c.per_gpu) for c in capacities}
    for c in capacities:
        owned[(c.team, c.flavor, c.resource)] += c.count
    extra = []
    if cpu_memory:
        extra = [(CPU_MEMORY_FLAVOR, "cpu"), (CPU_MEMORY_FLAVOR, "memory")]
        for team, (cpus, mem) in cpu_memory.items():
            owned[(team, CPU_MEMORY_FLAVOR, "cpu")] += cpus
            owned[(team, CPU_MEMORY_FLAVOR, "memory")] += mem
    groups = _groups(capacities, extra)

    def amount(team, flavor, resource):
        n = owned.get((team, flavor, resource), 0)
        unit = "Gi" if resource == "memory" else units.get((flavor, resource), ("", 1))[0]
        return "%d%s" % (n, unit) if unit else n

    objects: list[dict] = []
    for flavor in sorted({f for _r, fs in groups for f in fs}):
        spec = {}
        if flavor != CPU_MEMORY_FLAVOR:
            spec = {"nodeLabels": dict(sorted(flavor_labels[flavor].items())), "tolerations": [dict(names.GPU_TOLERATION)]}
        objects.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": _meta(flavor), "spec": spec})

    cohort_groups = _resource_groups(groups, lambda f, r: amount(None, f, r), None)
    cohort = {"apiVersion": API, "kind": "Cohort", "metadata": _meta(policy.cohort), "spec": {}}
    if any(owned.get((None, f, r), 0) for r_list, f_list in groups for f in f_list for r in r_list):
        cohort["spec"]["resourceGroups"] = cohort_groups
    objects.append(cohort)

    top_other = max((t.priority for t in teams if not t.production), default=0)
    for team in teams:
        objects.append({"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": _meta(team.name),
                        "value": team.priority,
                        "description": "Priority of team %s's workloads (label kueue.x-k8s.io/priority-class: %s)."
                        % (team.name, team.name)})
    for team in teams:
        if team.production:
            preemption = {"reclaimWithinCohort": "Any",
                          "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": top_other},
                          "withinClusterQueue": "LowerPriority"}
        else:
            preemption = {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"}
        spec = {
            "cohortName": policy.cohort,
            "namespaceSelector": {"matchExpressions": [{"key": names.NAMESPACE_NAME_LABEL, "operator": "In",
                                                        "values": sorted(team.namespaces)}]},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": preemption,
            "resourceGroups": _resource_groups(groups, lambda f, r, t=team.name: amount(t, f, r), team,
                                               _split_lending(team, owned), units),
        }
        objects.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": _meta(team.name), "spec": spec})
    for team in teams:
        for namespace in sorted(team.namespaces):
            objects.append({"apiVersion": API, "kind": "LocalQueue", "metadata": _meta(team.name, namespace),
                            "spec": {"clusterQueue": team.name}})
    team_namespaces = sorted({ns for team in teams for ns in team.namespaces})
    return {"objects": objects, "configuration": configuration(bool(cpu_memory), dra_in_use, team_namespaces,
                                                               device_class_mappings),
            "production_team": production.name if production else None}


def _resource_groups(groups, amount, team, lending: dict | None = None, units: dict | None = None) -> list[dict]:
    out = []
    for resources, flavors in groups:
        flavor_entries = []
        for flavor in flavors:
            entries = []
            for resource in resources:
                nominal = amount(flavor, resource)
                entry = {"name": resource, "nominalQuota": _quantity(nominal)}
                if team is not None:
                    entry.update(_limits(team, resource, lending.get((flavor, resource), 0),
                                         (units or {}).get((flavor, resource), ("", 1))))
                entries.append(entry)
            flavor_entries.append({"name": flavor, "resources": entries})
        out.append({"coveredResources": list(resources), "flavors": flavor_entries})
    return out


def _split_lending(team, owned) -> dict[tuple[str, str], int]:
    """A team's lending_limit is a total of whole GPUs, while Kueue caps lending per flavor
    and resource: split it over the team's whole-GPU pools, the biggest pool first, so the
    limits add up to exactly the team's total."""
    if team.lending_limit is None or not team.lend:
        return {}
    pools = sorted(((flavor, resource), n) for (t, flavor, resource), n in owned.items()
                   if t == team.name and resource in WHOLE_GPU_RESOURCES and n > 0)
    left = team.lending_limit
    split = {}
    for key, n in sorted(pools, key=lambda kv: -kv[1]):
        split[key] = min(left, n)
        left -= split[key]
    return split


def _limits(team, resource: str, lending: int, unit: tuple[str, int] = ("", 1)) -> dict:
    """Borrowing and lending limits from policy; GPU counts only, never CPU or memory.
    ``lending`` is this pool's part of the team's lending_limit (_split_lending); ``unit``:
    (suffix, units per GPU) of a resource not counted in GPUs (Capacity.unit, per_gpu)."""
    if resource in ("cpu", "memory"):
        return {}
    limits = {}
    if not team.borrow:
        limits["borrowingLimit"] = 0
    elif team.borrowing_limit is not None:
        limits["borrowingLimit"] = (team.borrowing_limit if not unit[0]
                                    else "%d%s" % (team.borrowing_limit * unit[1], unit[0]))
    if not team.lend:
        limits["lendingLimit"] = 0
    elif team.lending_limit is not None and resource in WHOLE_GPU_RESOURCES:
        limits["lendingLimit"] = lending
    return limits


def configuration(cover_cpu_memory: bool, dra_in_use: bool, team_namespaces: list[str] = (),
                  device_class_mappings=()) -> dict:
    """The Kueue manager Configuration (read once at start: restart Kueue on change).

    In the teams' namespaces Kueue also takes the workloads without a queue label and holds
    them (suspended, gated) until one is given: no Job or Pod there starts outside a quota.
    Elsewhere (kube-system, the operators' namespaces) it leaves them alone."""
    resources: dict = {}
    if not cover_cpu_memory:
        # Queues cover GPUs only; CPU and memory requests are not checked against quota.
        resources["quotaCheckStrategy"] = "IgnoreUndeclared"
    if dra_in_use:
        resources["deviceClassMappings"] = [{"name": names.DRA_RESOURCE, "deviceClassNames": [names.DRA_DEVICE_CLASS]}]
    if device_class_mappings:
        # Counter quota (dynamic MIG: planners/dynamic_mig.device_class_mapping).
        resources.setdefault("deviceClassMappings", []).extend(device_class_mappings)
    config = {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        "integrations": {"frameworks": list(FRAMEWORKS)},
    }
    if resources:
        config["resources"] = resources
    if team_namespaces:
        config["manageJobsWithoutQueueName"] = True
        config["managedJobsNamespaceSelector"] = {"matchExpressions": [
            {"key": names.NAMESPACE_NAME_LABEL, "operator": "In", "values": list(team_namespaces)}]}
    return config
