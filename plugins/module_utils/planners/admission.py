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
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names


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
                               "workload_priority_classes": allowed})
    return {
        "namespaces": namespaces,
        "gpu_resources": advertised_resources(states),
        "gpu_resource_prefixes": [names.GPU_RESOURCE, names.MIG_RESOURCE_PREFIX],
        "production_priority_class": ({"name": names.PRODUCTION_PRIORITY_CLASS, "value": production.priority}
                                      if production else None),
    }
