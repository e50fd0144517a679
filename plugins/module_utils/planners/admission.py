# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each team namespace may ask for: the decisions behind the admission policies
(render_manifests turns them into ValidatingAdmissionPolicies, Pod Security labels and
production's PriorityClass; docs/security.md says why).

* A GPU only through the namespace's own LocalQueue: any resource the Plan advertises (in any
  state, windows included) or any device-plugin name (``nvidia.com/gpu*``, ``nvidia.com/mig-*``),
  or a DRA claim.
* WorkloadPriorityClasses: the team's own, and those of non-production teams whose value is
  not above the team's; production's only in production's namespaces.
* Pod Security: the team's level (``restricted`` unless the inventory says ``baseline``).
* Allow-lists, not deny-lists: a pod's PriorityClass only production's, only in production's
  namespaces; no RuntimeClass (GPUs come from the device plugin or DRA, which need none).
  Whatever an admin or an add-on installs later stays closed until the Plan names it.
* A GPU pod's termination grace at most ``MAX_GPU_TERMINATION_GRACE_SECONDS``.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names

# Kueue preempts and reclaims by deleting pods, and the kubelet waits the pod's own
# terminationGracePeriodSeconds before the GPU is free: the longest a lender (production)
# waits for its GPUs back. Five minutes lets a training job write a checkpoint on SIGTERM
# (Kubernetes' default is 30 s) without letting a member keep GPUs outside quota for long.
MAX_GPU_TERMINATION_GRACE_SECONDS = 300


def advertised_resources(states: list[list[dict]]) -> list[str]:
    """Every extended resource a node advertises in any of ``states`` (lists of node records)."""
    return sorted({r for nodes in states for node in nodes for r in (node.get("advertised") or {})})


def plan_admission(teams, kueue_objects: list[dict], states: list[list[dict]]) -> dict:
    """The admission decisions of the Plan, as plain data (plan.json key ``admission``).

    ``kueue_objects``: the base state's Kueue objects (the LocalQueue of each namespace and
    the WorkloadPriorityClasses come from them); ``states``: the node records of the base
    state and of each window.
    """
    local_queue = {o["metadata"]["namespace"]: o["metadata"]["name"] for o in kueue_objects if o["kind"] == "LocalQueue"}
    class_value = {o["metadata"]["name"]: o["value"] for o in kueue_objects if o["kind"] == "WorkloadPriorityClass"}
    production = next((t for t in teams if t.production), None)
    # kueue_quotas names a team's WorkloadPriorityClass after the team.
    production_class = production.name if production else None
    namespaces = []
    for team in teams:
        allowed = sorted(name for name, value in class_value.items()
                         if name == team.name or (name != production_class and value <= team.priority))
        for ns in sorted(team.namespaces):
            namespaces.append({"name": ns, "team": team.name, "production": team.production,
                               "queue": local_queue[ns], "pod_security": team.pod_security,
                               "workload_priority_classes": allowed,
                               # A pod's (kube-scheduler's) PriorityClass: production's, in its namespaces.
                               "priority_classes": ([names.PRODUCTION_PRIORITY_CLASS] if team.production else [])})
    return {
        "namespaces": namespaces,
        "gpu_resources": advertised_resources(states),
        "gpu_resource_prefixes": [names.GPU_RESOURCE, names.MIG_RESOURCE_PREFIX],
        "runtime_classes": [],
        "max_gpu_termination_grace_seconds": MAX_GPU_TERMINATION_GRACE_SECONDS,
        "production_priority_class": ({"name": names.PRODUCTION_PRIORITY_CLASS, "value": production.priority}
                                      if production else None),
    }
