# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Plan's admission decisions (``plan["admission"]``) as Kubernetes objects: three
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


# The kinds Kueue v0.19 holds suspended until it admits them (its integrations with a suspend
# field: pkg/controller/jobs/*): API group, resource, kind. Kubeflow's keep it at
# spec.runPolicy.suspend, the others at spec.suspend. Their controllers create the pods (or
# child Jobs) of an admitted workload, so Kueue leaves those pods ungated.
SUSPENDED_KINDS = [("batch", "jobs", "Job"), ("jobset.x-k8s.io", "jobsets", "JobSet"),
                   ("kubeflow.org", "mpijobs", "MPIJob"), ("kubeflow.org", "pytorchjobs", "PyTorchJob"),
                   ("ray.io", "rayjobs", "RayJob"), ("ray.io", "rayclusters", "RayCluster"),
                   ("workload.codeflare.dev", "appwrappers", "AppWrapper"),
                   ("trainer.kubeflow.org", "trainjobs", "TrainJob")]


def _rules(pairs, operations) -> list[dict]:
    """resourceRules for (API group, resource) pairs, one rule per group."""
    groups: dict = {}
    for group, resource in pairs:
        groups.setdefault(group, []).append(resource)
    return [{"apiGroups": [group], "apiVersions": ["*"], "operations": list(operations), "resources": sorted(resources)}
            for group, resources in sorted(groups.items())]


def _controller_variables(plan: dict) -> list[dict]:
    """``controller``: the request comes from a controller, i.e. kube-controller-manager or a
    service account of a namespace no team owns (kube-system's controllers, Kueue, JobSet's,
    Kubeflow's, KubeRay's). A member's ``edit`` role impersonates only its own namespace's
    service accounts and can mint no other credentials, so a member is never one.
    ``kueue``: Kueue's own service account."""
    user = "request.userInfo.username"
    return [
        {"name": "teamNamespaces", "expression": _cel(team_namespaces(plan))},
        {"name": "controller", "expression": (
            "%(u)s == %(kcm)s || (%(u)s.startsWith(%(sa)s) && "
            "!variables.teamNamespaces.exists(ns, %(u)s.startsWith(%(sa)s + ns + ':')))"
            % {"u": user, "kcm": _cel(names.CONTROLLER_MANAGER_USER), "sa": _cel(names.SERVICE_ACCOUNT_USER_PREFIX)})},
        {"name": "kueue", "expression": "%s == %s" % (user, _cel(names.KUEUE_USER))},
    ]


def _gated(obj: str) -> str:
    """CEL: the Pod ``obj`` carries Kueue's scheduling gate."""
    return ("(has(%(o)s.spec.schedulingGates) && %(o)s.spec.schedulingGates.exists(g, g.name == %(g)s))"
            % {"o": obj, "g": _cel(names.KUEUE_ADMISSION_GATE)})


def gpu_policy(plan: dict) -> dict:
    """Pods, Jobs, Deployments and StatefulSets in a team namespace: a GPU (a resource of the
    Plan or a device-plugin name) or a DRA claim reaches a node only through Kueue.

    * Created with the namespace's own queue label.
    * A GPU pod created by a member carries Kueue's scheduling gate (its webhook gates every
      pod it manages: one without the gate claims an owner Kueue leaves it to); only a
      controller's pod for the suspended kind that owns it (a Job's, admitted as a whole) has
      none. ownerReferences on a GPU pod are written only by controllers, never added later.
    * Only Kueue removes the gate.
    * Termination grace of GPU pods bounded; RuntimeClasses from the Plan's allow-list; no
      NVIDIA_VISIBLE_DEVICES env, cdi.k8s.io/ annotations or device-list mounts; DRA through
      ResourceClaimTemplates only (Kueue counts them).
    """
    admission = plan["admission"]
    asks = ("c.resources.%s.exists(r, r in variables.gpuResources || variables.gpuPrefixes.exists(p, r.startsWith(p)))")
    container_gpu = "has(c.resources) && ((has(c.resources.limits) && %s) || (has(c.resources.requests) && %s))" % (
        asks % "limits", asks % "requests")
    env_set = "has(c.env) && c.env.exists(e, e.name == %s)" % _cel(names.VISIBLE_DEVICES_ENV)
    device_mount = "has(c.volumeMounts) && c.volumeMounts.exists(m, m.mountPath.startsWith(%s))" % _cel(
        names.DEVICE_LIST_MOUNT_DIR)
    owners = "has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0"
    variables = _controller_variables(plan) + [
        {"name": "isPod", "expression": "object.kind == 'Pod'"},
        {"name": "spec", "expression": "variables.isPod ? object.spec : object.spec.template.spec"},
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
        # A controller's pod for the suspended workload that owns it: Kueue admitted the owner.
        {"name": "ownedPod", "expression": (
            "variables.isPod && variables.controller && has(object.metadata.ownerReferences) && "
            "object.metadata.ownerReferences.exists(o, o.kind in %s && has(o.controller) && o.controller)"
            % _cel(sorted({kind for _g, _r, kind in SUSPENDED_KINDS})))},
        {"name": "gated", "expression": "variables.isPod && %s" % _gated("object")},
        {"name": "wasGated", "expression": "request.operation == 'UPDATE' && oldObject.kind == 'Pod' && %s"
                                           % _gated("oldObject")},
        {"name": "runtimeClasses", "expression": _cel(admission["runtime_classes"])},
        {"name": "maxGrace", "expression": _cel(admission["max_gpu_termination_grace_seconds"])},
    ]
    create, gpu_pod = "request.operation != 'CREATE'", "!variables.isPod || !variables.asksForGpu"
    validations = [
        {"expression": "%s || !variables.asksForGpu || variables.ownedPod || "
                       "(variables.teamQueue != '' && variables.queue == variables.teamQueue)" % create,
         "messageExpression": ("'GPUs in namespace ' + request.namespace + ' come only through Kueue: label the ' + "
                               "object.kind + ' %s: ' + variables.teamQueue + ' (the team\\'s LocalQueue)'"
                               % names.QUEUE_LABEL),
         "reason": "Forbidden"},
        {"expression": "%s || variables.controller || !(%s) || (request.operation == 'UPDATE' && "
                       "object.metadata.ownerReferences.all(o, has(oldObject.metadata.ownerReferences) && "
                       "o in oldObject.metadata.ownerReferences))" % (gpu_pod, owners),
         "messageExpression": ("'ownerReferences on a GPU pod in namespace ' + request.namespace + ' are written by "
                               "the controller that creates it, not by ' + request.userInfo.username + "
                               "': create the Job, Deployment or StatefulSet instead (Kueue admits it)'"),
         "reason": "Forbidden"},
        {"expression": "%s || %s || variables.ownedPod || variables.gated" % (create, gpu_pod),
         "messageExpression": ("'a GPU pod in namespace ' + request.namespace + ' starts only when Kueue admits it: "
                               "it must carry Kueue\\'s scheduling gate %s (Kueue leaves pods it believes owned "
                               "by a workload, and spec.nodeName skips the scheduler)'" % names.KUEUE_ADMISSION_GATE),
         "reason": "Forbidden"},
        {"expression": "!variables.wasGated || variables.gated || variables.kueue",
         "messageExpression": ("'only Kueue (%s) removes the scheduling gate %s, when it admits the pod\\'s "
                               "workload; not ' + request.userInfo.username"
                               % (names.KUEUE_USER, names.KUEUE_ADMISSION_GATE)),
         "reason": "Forbidden"},
        {"expression": "%s || !variables.asksForGpu || !has(variables.spec.terminationGracePeriodSeconds) || "
                       "variables.spec.terminationGracePeriodSeconds <= variables.maxGrace" % create,
         "message": ("terminationGracePeriodSeconds of a GPU pod in a team namespace is at most %d: Kueue's "
                     "preemption and reclaim wait for it before the GPUs are free"
                     % admission["max_gpu_termination_grace_seconds"]),
         "reason": "Forbidden"},
        {"expression": "%s || !has(variables.spec.runtimeClassName) || "
                       "variables.spec.runtimeClassName in variables.runtimeClasses" % create,
         "messageExpression": ("'runtimeClassName ' + variables.spec.runtimeClassName + ' is refused in team namespaces "
                               "(allowed: ' + (size(variables.runtimeClasses) > 0 ? variables.runtimeClasses.join(', ') "
                               ": 'none') + '): GPUs come from the device plugin or DRA through Kueue'"),
         "reason": "Forbidden"},
        {"expression": "(%s || !variables.containers.exists(c, %s)) && !(has(variables.spec.ephemeralContainers) && "
                       "variables.spec.ephemeralContainers.exists(c, %s))" % (create, env_set, env_set),
         "message": "%s is set by the device plugin, never by a pod in a team namespace: remove it from env"
                    % names.VISIBLE_DEVICES_ENV,
         "reason": "Forbidden"},
        # Device requests past the device plugin and DRA: no honest pod needs them (the device
        # plugin's CDI annotations go on the container it allocates for, not on the pod).
        {"expression": "!variables.isPod || !has(object.metadata.annotations) || "
                       "!object.metadata.annotations.exists(k, k.startsWith(%s) && !(request.operation == 'UPDATE' && "
                       "has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && "
                       "oldObject.metadata.annotations[k] == object.metadata.annotations[k]))"
                       % _cel(names.CDI_ANNOTATION_PREFIX),
         "message": "%s annotations ask the container runtime for devices past Kueue: remove them"
                    % names.CDI_ANNOTATION_PREFIX,
         "reason": "Forbidden"},
        {"expression": "(%s || !variables.containers.exists(c, %s)) && !(has(variables.spec.ephemeralContainers) && "
                       "variables.spec.ephemeralContainers.exists(c, %s))" % (create, device_mount, device_mount),
         "message": "a volume mounted under %s is a device list for the NVIDIA runtime: mount it elsewhere"
                    % names.DEVICE_LIST_MOUNT_DIR,
         "reason": "Forbidden"},
        {"expression": "%s || !has(variables.spec.resourceClaims) || "
                       "variables.spec.resourceClaims.all(c, !has(c.resourceClaimName))" % create,
         "message": ("DRA devices in team namespaces come only from a resourceClaimTemplateName (Kueue counts the "
                     "template's devices), never a shared resourceClaimName"),
         "reason": "Forbidden"},
    ]
    return {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": _meta(names.GPU_ADMISSION_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]},
                # Ephemeral containers (kubectl debug) may not ask for resources, but may set env.
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/ephemeralcontainers"]},
                {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]},
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["deployments", "statefulsets"]},
            ]},
            "variables": variables,
            "validations": validations,
        },
    }


def _suspended(obj: str) -> str:
    """CEL: the workload ``obj`` is suspended (spec.suspend, or Kubeflow's spec.runPolicy.suspend)."""
    return ("(has(%(o)s.spec) && has(%(o)s.spec.suspend) ? %(o)s.spec.suspend == true : "
            "has(%(o)s.spec) && has(%(o)s.spec.runPolicy) && has(%(o)s.spec.runPolicy.suspend) && "
            "%(o)s.spec.runPolicy.suspend == true)" % {"o": obj})


def kueue_starts_policy(plan: dict) -> dict:
    """The workloads Kueue suspends (SUSPENDED_KINDS) start only when Kueue admits them, and
    DRA claims ask only for what Kueue counts.

    * Created suspended when it names a queue, unless by a controller: Kueue's webhooks suspend
      every such one; one left running claims an owner Kueue leaves it to.
    * suspend goes from true to false only by a controller (Kueue; JobSet's for its child Jobs).
    * A running Job's parallelism is raised only by a controller (Kueue admitted its pods' worth).
    * ResourceClaimTemplates ask only for the device classes Kueue's deviceClassMappings count;
      members make no ResourceClaims (a pod names only templates: gpu_policy).
    """
    mappings = (plan.get("kueue", {}).get("configuration", {}).get("resources") or {}).get("deviceClassMappings") or []
    variables = _controller_variables(plan) + [
        {"name": "dra", "expression": "object.apiVersion.startsWith('resource.k8s.io/')"},
        {"name": "suspended", "expression": "!variables.dra && %s" % _suspended("object")},
        {"name": "wasSuspended", "expression": "request.operation == 'UPDATE' && !variables.dra && %s"
                                               % _suspended("oldObject")},
        {"name": "deviceClasses", "expression": _cel(sorted({c for m in mappings for c in m["deviceClassNames"]}))},
        {"name": "claimSpec", "expression": "object.kind == 'ResourceClaimTemplate' ? object.spec.spec : object.spec"},
        {"name": "deviceRequests", "expression": "has(variables.claimSpec.devices) && "
                                                 "has(variables.claimSpec.devices.requests) ? "
                                                 "variables.claimSpec.devices.requests : []"},
    ]
    counted = "r.%s in variables.deviceClasses"
    validations = [
        # Unlabelled workloads are the queue-label rule's (gpu_policy): one rule per refusal.
        {"expression": "request.operation != 'CREATE' || variables.dra || variables.suspended || variables.controller || "
                       "%s == ''" % _label("object", names.QUEUE_LABEL),
         "messageExpression": ("object.kind + ' ' + object.metadata.name + ' in namespace ' + request.namespace + "
                               "' must be created suspended: Kueue suspends every workload it manages and starts it "
                               "when it admits it (it leaves alone one that names a workload as its owner: remove "
                               "metadata.ownerReferences)'"),
         "reason": "Forbidden"},
        {"expression": "!variables.wasSuspended || variables.suspended || variables.controller",
         "messageExpression": ("'only Kueue starts a suspended ' + object.kind + ' in namespace ' + request.namespace + "
                               "': it clears suspend when it admits the workload; not ' + request.userInfo.username"),
         "reason": "Forbidden"},
        {"expression": ("request.operation != 'UPDATE' || object.kind != 'Job' || variables.controller || "
                        "variables.wasSuspended || !has(object.spec.parallelism) || "
                        "(has(oldObject.spec.parallelism) && object.spec.parallelism <= oldObject.spec.parallelism)"),
         "messageExpression": ("'parallelism of the running Job ' + object.metadata.name + ' is raised only by Kueue "
                               "(it admitted the Job\\'s pods at the parallelism it had); not ' + "
                               "request.userInfo.username"),
         "reason": "Forbidden"},
        {"expression": "request.operation != 'CREATE' || object.kind != 'ResourceClaim' || variables.controller",
         "message": ("ResourceClaims in team namespaces are made from a pod's ResourceClaimTemplate by the "
                     "resource claim controller, which Kueue counts; a claim made by hand is not"),
         "reason": "Forbidden"},
        {"expression": ("request.operation != 'CREATE' || !variables.dra || variables.controller || "
                        "variables.deviceRequests.all(r, (!has(r.exactly) || %s) && (!has(r.deviceClassName) || %s) && "
                        "(!has(r.firstAvailable) || r.firstAvailable.all(s, s.deviceClassName in variables.deviceClasses)))"
                        % (counted % "exactly.deviceClassName", counted % "deviceClassName")),
         "messageExpression": ("object.kind + ' ' + object.metadata.name + ' asks for a device class Kueue does not "
                               "count: team namespaces may ask only for ' + (size(variables.deviceClasses) > 0 ? "
                               "variables.deviceClasses.join(', ') : 'none')"),
         "reason": "Forbidden"},
    ]
    kinds = [(group, resource) for group, resource, _kind in SUSPENDED_KINDS]
    return {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": _meta(names.KUEUE_ADMITS_POLICY),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": _rules(kinds, ("CREATE", "UPDATE")) + _rules(
                [("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceclaimtemplates")], ("CREATE",))},
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
    namespace may use; its pods' PriorityClass one the Plan allows the namespace (an
    allow-list; a system one and production's elsewhere get their own message). A value an object already had is kept on update (a pod that
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
        {"name": "podClasses", "expression": _cel({ns["name"]: ns["priority_classes"] for ns in admission["namespaces"]})},
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
        # An allow-list: a PriorityClass installed later (by an admin or an add-on) is not a team's.
        {"expression": "!variables.podClassChanged || variables.podClass.startsWith(%s) || variables.podClass == %s || "
                       "(request.namespace in variables.podClasses && "
                       "variables.podClass in variables.podClasses[request.namespace])"
                       % (_cel(names.SYSTEM_PRIORITY_CLASS_PREFIX), _cel(production_class)),
         "messageExpression": ("'PriorityClass ' + variables.podClass + ' is not for pods in namespace ' + "
                               "request.namespace + ': it may use ' + (request.namespace in variables.podClasses && "
                               "size(variables.podClasses[request.namespace]) > 0 ? "
                               "variables.podClasses[request.namespace].join(', ') : 'none') + "
                               "' (a workload\\'s priority is its kueue.x-k8s.io/priority-class label)'"),
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
    for policy in (gpu_policy(plan), kueue_starts_policy(plan), priority_policy(plan)):
        objects += [policy, _binding(policy["metadata"]["name"], plan)]
    return objects


def pod_security_labels(level: str) -> dict:
    """Pod Security admission's labels for a namespace at ``level``: enforced, and warned and
    audited at the same level (kubectl shows the warning)."""
    return {names.POD_SECURITY_ENFORCE_LABEL: level, names.POD_SECURITY_WARN_LABEL: level,
            names.POD_SECURITY_AUDIT_LABEL: level}
