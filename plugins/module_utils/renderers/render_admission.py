# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Plan's admission decisions (``plan["admission"]``) as Kubernetes objects: two
ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30), each
with a binding to the team namespaces, and production's PriorityClass. docs/security.md
describes what they refuse and why.

The policies' CEL reads the Plan's values as literals (JSON's string, list and map syntax is
CEL's), so a policy needs no parameter objects and changes only with the Plan.
"""

from __future__ import annotations

import json

from ansible_collections.gpushare.cluster.plugins.module_utils import names

API = "admissionregistration.k8s.io/v1"


def _cel(value) -> str:
    """A CEL literal: JSON's strings, lists and maps are valid CEL."""
    return json.dumps(value, sort_keys=True)


def _meta(name: str) -> dict:
    return {"name": name, "labels": dict(names.MANAGED_LABEL)}


def team_namespaces(plan: dict) -> list[str]:
    return sorted(ns["name"] for ns in plan["admission"]["namespaces"])


def _binding(policy: str, plan: dict) -> dict:
    return {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": _meta(policy),
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchExpressions": [
                {"key": names.NAMESPACE_NAME_LABEL, "operator": "In", "values": team_namespaces(plan)}]}},
        },
    }


def _label(obj: str, key: str) -> str:
    """CEL: the value of label ``key`` of ``obj`` (``object``, ``oldObject``), '' when unset."""
    return ("(has(%(o)s.metadata.labels) && %(k)s in %(o)s.metadata.labels ? %(o)s.metadata.labels[%(k)s] : '')"
            % {"o": obj, "k": _cel(key)})


def gpu_policy(plan: dict) -> dict:
    """Pods and Jobs in a team namespace: a GPU (a resource of the Plan or a device-plugin
    name) or a DRA claim only with the namespace's own queue label; no NVIDIA runtime class;
    no NVIDIA_VISIBLE_DEVICES env. A Job's pods carry no queue label: the Job controller
    creating them is let through (the Job itself was checked)."""
    admission = plan["admission"]
    asks = ("c.resources.%s.exists(r, r in variables.gpuResources || variables.gpuPrefixes.exists(p, r.startsWith(p)))")
    container_gpu = "has(c.resources) && ((has(c.resources.limits) && %s) || (has(c.resources.requests) && %s))" % (
        asks % "limits", asks % "requests")
    env_set = "has(c.env) && c.env.exists(e, e.name == %s)" % _cel(names.VISIBLE_DEVICES_ENV)
    variables = [
        {"name": "spec", "expression": "object.kind == 'Pod' ? object.spec : object.spec.template.spec"},
        {"name": "containers", "expression": "variables.spec.containers + "
                                             "(has(variables.spec.initContainers) ? variables.spec.initContainers : [])"},
        {"name": "gpuResources", "expression": _cel(admission["gpu_resources"])},
        {"name": "gpuPrefixes", "expression": _cel(admission["gpu_resource_prefixes"])},
        {"name": "queues", "expression": _cel({ns["name"]: ns["queue"] for ns in admission["namespaces"]})},
        {"name": "teamQueue", "expression": "request.namespace in variables.queues ? variables.queues[request.namespace] : ''"},
        {"name": "queue", "expression": _label("object", names.QUEUE_LABEL)},
        {"name": "asksForGpu", "expression": "variables.containers.exists(c, %s) || "
                                             "(has(variables.spec.resourceClaims) && size(variables.spec.resourceClaims) > 0)"
                                             % container_gpu},
        {"name": "jobControllerPod", "expression": (
            "object.kind == 'Pod' && request.userInfo.username in %s && has(object.metadata.ownerReferences) && "
            "object.metadata.ownerReferences.exists(o, o.kind == 'Job' && has(o.controller) && o.controller)"
            % _cel(list(names.JOB_CONTROLLER_USERS)))},
    ]
    validations = [
        {"expression": "request.operation != 'CREATE' || !variables.asksForGpu || variables.jobControllerPod || "
                       "(variables.teamQueue != '' && variables.queue == variables.teamQueue)",
         "messageExpression": ("'GPUs in namespace ' + request.namespace + ' come only through Kueue: label the ' + "
                               "object.kind + ' %s: ' + variables.teamQueue + ' (the team\\'s LocalQueue)'"
                               % names.QUEUE_LABEL),
         "reason": "Forbidden"},
        {"expression": "request.operation != 'CREATE' || !has(variables.spec.runtimeClassName) || "
                       "!variables.spec.runtimeClassName.startsWith(%s)" % _cel(names.NVIDIA_RUNTIME_CLASS_PREFIX),
         "messageExpression": ("'runtimeClassName ' + variables.spec.runtimeClassName + ' is refused in team namespaces: "
                               "GPUs come from the device plugin or DRA through Kueue'"),
         "reason": "Forbidden"},
        {"expression": "!variables.containers.exists(c, %s) && !(has(variables.spec.ephemeralContainers) && "
                       "variables.spec.ephemeralContainers.exists(c, %s))" % (env_set, env_set),
         "message": "%s is set by the device plugin, never by a pod in a team namespace: remove it from env"
                    % names.VISIBLE_DEVICES_ENV,
         "reason": "Forbidden"},
    ]
    return {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": _meta(names.GPU_ADMISSION_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
                # Ephemeral containers (kubectl debug) may not ask for resources, but may set env.
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/ephemeralcontainers"]},
                {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]},
            ]},
            "variables": variables,
            "validations": validations,
        },
    }


# The built-in kinds with a pod template at spec.template (their API versions: a custom
# resource of the same kind may be shaped otherwise).
TEMPLATE_KINDS = ["DaemonSet", "Deployment", "Job", "ReplicaSet", "StatefulSet"]
TEMPLATE_API_VERSIONS = ["apps/v1", "batch/v1"]


def _pod_priority_class(obj: str) -> str:
    """CEL: spec.priorityClassName of a Pod, or of the pod template of a Job, Deployment,
    StatefulSet, ReplicaSet or DaemonSet, or of a CronJob's job template; '' when none."""
    def present(path: str) -> str:
        """has() of every step of ``path`` below ``obj``, so a missing step is false, not an error."""
        steps = path.split(".")
        return " && ".join("has(%s.%s)" % (obj, ".".join(steps[:i + 1])) for i in range(len(steps)))

    template, cron = "spec.template.spec.priorityClassName", "spec.jobTemplate.spec.template.spec.priorityClassName"
    return ("(%(o)s.kind == 'Pod' && %(o)s.apiVersion == 'v1' ? "
            "(%(pod)s ? %(o)s.spec.priorityClassName : '') : "
            "%(o)s.kind in %(kinds)s && %(o)s.apiVersion in %(apis)s && %(t)s ? %(o)s.%(tp)s : "
            "%(o)s.kind == 'CronJob' && %(o)s.apiVersion == 'batch/v1' && %(c)s ? %(o)s.%(cp)s : '')"
            % {"o": obj, "pod": present("spec.priorityClassName"), "t": present(template), "tp": template,
               "c": present(cron), "cp": cron, "kinds": _cel(TEMPLATE_KINDS), "apis": _cel(TEMPLATE_API_VERSIONS)})


def priority_policy(plan: dict) -> dict:
    """Any object in a team namespace: its Kueue WorkloadPriorityClass label one the
    namespace may use; its pods' PriorityClass not a system one, and production's only in
    production's namespaces. A value an object already had is kept on update (a pod that
    predates the policy can still be finalized)."""
    admission = plan["admission"]
    production_class = (admission["production_priority_class"] or {}).get("name", "")
    variables = [
        {"name": "allowedClasses", "expression": _cel({ns["name"]: ns["workload_priority_classes"]
                                                       for ns in admission["namespaces"]})},
        {"name": "productionNamespaces", "expression": _cel(sorted(ns["name"] for ns in admission["namespaces"]
                                                                   if ns["production"]))},
        {"name": "workloadClass", "expression": _label("object", names.WORKLOAD_PRIORITY_LABEL)},
        {"name": "oldWorkloadClass", "expression": "request.operation == 'UPDATE' ? %s : ''"
                                                   % _label("oldObject", names.WORKLOAD_PRIORITY_LABEL)},
        {"name": "podClass", "expression": _pod_priority_class("object")},
        {"name": "oldPodClass", "expression": "request.operation == 'UPDATE' ? %s : ''" % _pod_priority_class("oldObject")},
        {"name": "podClassChanged", "expression": "variables.podClass != '' && variables.podClass != variables.oldPodClass"},
    ]
    validations = [
        {"expression": ("variables.workloadClass == '' || variables.workloadClass == variables.oldWorkloadClass || "
                        "(request.namespace in variables.allowedClasses && "
                        "variables.workloadClass in variables.allowedClasses[request.namespace])"),
         "messageExpression": ("'WorkloadPriorityClass ' + variables.workloadClass + ' is not for namespace ' + "
                               "request.namespace + ': it may use ' + "
                               "(request.namespace in variables.allowedClasses ? "
                               "variables.allowedClasses[request.namespace].join(', ') : 'none')"),
         "reason": "Forbidden"},
        {"expression": "!variables.podClassChanged || !variables.podClass.startsWith(%s)"
                       % _cel(names.SYSTEM_PRIORITY_CLASS_PREFIX),
         "messageExpression": "'PriorityClass ' + variables.podClass + ' is for the cluster\\'s own pods, not a team\\'s'",
         "reason": "Forbidden"},
        {"expression": "!variables.podClassChanged || variables.podClass != %s || "
                       "request.namespace in variables.productionNamespaces" % _cel(production_class),
         "messageExpression": "'PriorityClass ' + variables.podClass + ' is production\\'s: only for pods in ' + "
                              "variables.productionNamespaces.join(', ')",
         "reason": "Forbidden"},
    ]
    return {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": _meta(names.PRIORITY_ADMISSION_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            # Every kind: Kueue reads the label from any workload it manages (Job, Pod,
            # Deployment, StatefulSet, JobSet, ...).
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["*"],
                 "scope": "Namespaced"}]},
            "variables": variables,
            "validations": validations,
        },
    }


def production_priority_class(plan: dict) -> list[dict]:
    """Production's PriorityClass, when the Plan has a production team. preemptionPolicy
    Never: taking GPUs back is Kueue's (it evicts whole workloads and requeues them); the class
    orders production's pods first in the scheduling queue and last in node-pressure eviction."""
    pc = plan["admission"]["production_priority_class"]
    if not pc:
        return []
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": _meta(pc["name"]),
             "value": pc["value"], "globalDefault": False, "preemptionPolicy": "Never",
             "description": "Production's pods (only in production's namespaces: policy %s)." % names.PRIORITY_ADMISSION_POLICY}]


def admission_objects(plan: dict) -> list[dict]:
    """Production's PriorityClass, then each policy before its binding; none without teams."""
    if not plan["admission"]["namespaces"]:
        return []
    objects = production_priority_class(plan)
    for policy in (gpu_policy(plan), priority_policy(plan)):
        objects += [policy, _binding(policy["metadata"]["name"], plan)]
    return objects


def pod_security_labels(level: str) -> dict:
    """Pod Security admission's labels for a namespace at ``level``: enforced, and warned and
    audited at the same level (kubectl shows the warning)."""
    return {names.POD_SECURITY_ENFORCE_LABEL: level, names.POD_SECURITY_WARN_LABEL: level,
            names.POD_SECURITY_AUDIT_LABEL: level}
