# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission objects of every example inventory: their shapes, the namespaces, queues,
GPU resources and priority classes they name (each derived here another way: the inventory
files as written, the LocalQueues of the rendered Kueue manifest, what the GPU Operator's
ConfigMaps make nodes advertise), and what their CEL refuses, asked of tests/unit/cel_subset.py
(the real apiserver answers on the twin, tests/twin/test_enforcement.py). The expected
answers are the issue's rules (docs/security.md), written out per request."""

from __future__ import annotations

import copy
import inspect
import json
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import manifest_files, render
from cel_subset import admit, identifiers, parse
from inventories import EXAMPLE_NAMES, EXAMPLES, ROOT, example_day, load_example
from test_advertised_from_manifests import states

PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}
ADMISSION_KINDS = ("PriorityClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"


def teams_as_written(example: str) -> list[dict]:
    return yaml.safe_load((EXAMPLES / example / "group_vars" / "all" / "teams.yml").read_text())["gpushare_teams"]


def admission(example: str) -> dict:
    """kind/name -> object, from the rendered 00-namespaces.yaml."""
    files = {f["path"]: f["content"] for f in manifest_files(PLANS[example])}
    return {"%s/%s" % (o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(files["00-namespaces.yaml"])
            if o["kind"] in ADMISSION_KINDS}


def literal(policy: dict, variable: str):
    """A variable of the policy that is a literal, read as YAML (JSON is YAML)."""
    return yaml.safe_load(next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == variable))


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_objects_and_bindings(example):
    objects = admission(example)
    written = teams_as_written(example)
    team_namespaces = sorted(ns for t in written for ns in t.get("namespaces", [t["name"]]))
    policies = [o for o in objects.values() if o["kind"] == "ValidatingAdmissionPolicy"]
    assert sorted(p["metadata"]["name"] for p in policies) == ["gpushare-gpu-through-kueue", "gpushare-only-kueue-starts",
                                                               "gpushare-team-priority"]
    for policy in policies:
        binding = objects["ValidatingAdmissionPolicyBinding/" + policy["metadata"]["name"]]
        assert binding["apiVersion"] == policy["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert binding["spec"]["policyName"] == policy["metadata"]["name"]
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert binding["spec"]["matchResources"]["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": team_namespaces}]}
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert policy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpushare.cluster"}
        defined = [v["name"] for v in policy["spec"]["variables"]]
        for i, var in enumerate(policy["spec"]["variables"]):
            assert identifiers(parse(var["expression"])) <= set(defined[:i]), var["name"]
        for check in policy["spec"]["validations"]:
            for key in ("expression", "messageExpression"):
                if key in check:
                    assert identifiers(parse(check[key])) <= set(defined), check[key]
    production = [t for t in written if t.get("production")]
    if production:
        pc = objects["PriorityClass/gpushare-production"]
        assert (pc["apiVersion"], pc["value"], pc["globalDefault"]) == ("scheduling.k8s.io/v1", production[0]["priority"], False)
    else:
        assert "PriorityClass/gpushare-production" not in objects


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_pod_security_labels_as_the_inventory_says(example):
    want = {ns: t.get("pod_security", "restricted") for t in teams_as_written(example)
            for ns in t.get("namespaces", [t["name"]])}
    found = {o["metadata"]["name"]: o["metadata"]["labels"] for o in render(PLANS[example])["namespaces"]
             if o["kind"] == "Namespace"}
    assert set(found) == set(want)
    for ns, level in want.items():
        for mode in ("enforce", "warn", "audit"):
            assert found[ns]["pod-security.kubernetes.io/" + mode] == level, (ns, mode)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_gpu_policy_names_what_the_nodes_advertise_and_each_namespace_queue(example):
    policy = admission(example)["ValidatingAdmissionPolicy/gpushare-gpu-through-kueue"]
    by_configmaps = sorted({r for _state, _node, found, _plan in states(example) for r in found})
    assert literal(policy, "gpuResources") == by_configmaps
    kueue = render(PLANS[example])["kueue"]
    assert literal(policy, "queues") == {o["metadata"]["namespace"]: o["metadata"]["name"] for o in kueue
                                         if o["kind"] == "LocalQueue"}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_priority_classes_per_namespace(example):
    """Own class, and other non-production teams' classes not above the team's priority."""
    written = teams_as_written(example)
    priority = {t["name"]: t.get("priority", 1000 if t.get("production") else 100) for t in written}
    production = {t["name"] for t in written if t.get("production")}
    want = {}
    for t in written:
        mine = priority[t["name"]]
        for ns in t.get("namespaces", [t["name"]]):
            want[ns] = sorted(n for n in priority if n == t["name"] or (n not in production and priority[n] <= mine))
    policy = admission(example)["ValidatingAdmissionPolicy/gpushare-team-priority"]
    assert literal(policy, "allowedClasses") == want


# --- what the CEL refuses (the example day: production/prod-serving, data-science, training) ---

OBJECTS = admission("four-gpu-server")
GPU_POLICY = (OBJECTS["ValidatingAdmissionPolicy/gpushare-gpu-through-kueue"],
              OBJECTS["ValidatingAdmissionPolicyBinding/gpushare-gpu-through-kueue"])
PRIORITY_POLICY = (OBJECTS["ValidatingAdmissionPolicy/gpushare-team-priority"],
                   OBJECTS["ValidatingAdmissionPolicyBinding/gpushare-team-priority"])
STARTS_POLICY = (OBJECTS["ValidatingAdmissionPolicy/gpushare-only-kueue-starts"],
                 OBJECTS["ValidatingAdmissionPolicyBinding/gpushare-only-kueue-starts"])
# Kueue as its Helm chart runs it (service account kueue-controller-manager in kueue-system).
KUEUE = "system:serviceaccount:kueue-system:kueue-controller-manager"
GATE = "kueue.x-k8s.io/admission"


def pod(ns="training", requests=None, labels=None, init=False, gated=True, **spec) -> dict:
    """A pod as the policy sees it: after Kueue's pod webhook, which gates every pod it
    manages in a team namespace (``gated``)."""
    container = {"name": "main", "image": "app:1"}
    if requests:
        container["resources"] = {"limits": dict(requests)}
    body = {"containers": [{"name": "side", "image": "side:1"}], "initContainers": []}
    body["initContainers" if init else "containers"].append(container)
    if gated:
        body["schedulingGates"] = [{"name": GATE}]
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns, "labels": labels or {}},
            "spec": body}


def job(ns="training", requests=None, labels=None, **spec) -> dict:
    template = pod(ns, requests, gated=False, **spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": ns, "labels": labels or {}},
            "spec": {"template": {"spec": template["spec"]}}}


def gpu_refusals(obj, **request):
    if obj["kind"] == "Job":
        request.setdefault("group", "batch")
    return no_errors(admit(*GPU_POLICY, obj, **request))


def no_errors(refusals):
    """A refusal is a rule's, never an expression that failed on a well-formed object."""
    assert not [r for r in refusals if r.startswith("error:")], refusals
    return refusals


def queue(name):
    return {"kueue.x-k8s.io/queue-name": name}


@pytest.mark.parametrize("requests", [{"nvidia.com/gpu": 1}, {"nvidia.com/mig-1g.18gb": 1},
                                      {"nvidia.com/mig-7g.141gb.shared": 1}, {"nvidia.com/gpu.shared": 2},
                                      {"nvidia.com/mig-3g.71gb": 1}])  # the last two: no node advertises them
def test_gpu_only_through_the_namespace_queue(requests):
    for make in (pod, job):
        refusal = gpu_refusals(make("training", requests))
        assert refusal and "kueue.x-k8s.io/queue-name: training" in refusal[0], refusal
        assert gpu_refusals(make("training", requests, queue("production")))
        assert gpu_refusals(make("training", requests, queue("training"))) == []
        assert gpu_refusals(make("prod-serving", requests, queue("production"))) == []
        # Not a team namespace: the binding does not select it.
        assert gpu_refusals(make("kube-system", requests)) == []
    assert gpu_refusals(pod("training", requests, init=True))
    bare = pod("training", requests)
    del bare["spec"]["initContainers"], bare["metadata"]["labels"]
    assert gpu_refusals(bare)


def test_no_gpu_needs_no_label_and_dra_claims_do():
    assert gpu_refusals(pod("training", {"cpu": "2", "memory": "1Gi"})) == []
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "big"}]}
    assert gpu_refusals(pod("training", **claim))
    assert gpu_refusals(job("training", **claim))
    assert gpu_refusals(pod("training", labels=queue("training"), **claim)) == []


def test_a_job_pods_come_from_the_job_controller():
    owned = pod("training", {"nvidia.com/gpu": 1})
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u",
                                             "controller": True}]
    assert gpu_refusals(owned, username=JOB_CONTROLLER) == []
    assert gpu_refusals(owned, username="system:kube-controller-manager") == []
    # A member writing the same owner reference is no Job controller.
    assert gpu_refusals(owned, username="alice")
    assert gpu_refusals(pod("training", {"nvidia.com/gpu": 1}), username=JOB_CONTROLLER)


def test_nvidia_runtime_and_visible_devices_env():
    for runtime in ("nvidia", "nvidia-cdi", "nvidia-legacy"):
        assert gpu_refusals(pod("training", labels=queue("training"), runtimeClassName=runtime)), runtime
    # An allow-list (the Plan's: none), not a prefix: any other name is refused too.
    for runtime in ("gvisor", "kata-nvidia-gpu", "gpu"):
        refusal = gpu_refusals(pod("training", labels=queue("training"), runtimeClassName=runtime))
        assert refusal == ["runtimeClassName %s is refused in team namespaces (allowed: none): GPUs come from the "
                           "device plugin or DRA through Kueue" % runtime], refusal
    assert gpu_refusals(pod("training", labels=queue("training"))) == []
    env = pod("training", labels=queue("training"))
    env["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    assert gpu_refusals(env) and "NVIDIA_VISIBLE_DEVICES" in gpu_refusals(env)[0]
    assert gpu_refusals(job("prod-serving", labels=queue("production"), initContainers=env["spec"]["containers"]))
    debug = pod("training")
    debug["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "busybox", "env": env["spec"]["containers"][0]["env"]}]
    assert gpu_refusals(debug, operation="UPDATE", resource="pods/ephemeralcontainers", old=pod("training"))
    # Other env and other updates are no business of the policy.
    env["spec"]["containers"][0]["env"] = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]
    assert gpu_refusals(env) == []
    running = pod("training", {"nvidia.com/gpu": 1}, queue("training"))
    assert gpu_refusals(running, operation="UPDATE", old=running) == []


# --- issue 34: Kueue the only way to a GPU (owner references, the gate, suspend, DRA) ---

OWNER_MESSAGE = ("ownerReferences on a GPU pod in namespace training are written by the controller that creates it, "
                 "not by %s: create the Job, Deployment or StatefulSet instead (Kueue admits it)")
GATE_MESSAGE = ("a GPU pod in namespace training starts only when Kueue admits it: it must carry Kueue's scheduling "
                "gate kueue.x-k8s.io/admission (Kueue leaves pods it believes owned by a workload, and spec.nodeName "
                "skips the scheduler)")


def owned_by(obj, kind, controller=True):
    obj = copy.deepcopy(obj)
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind,
                                           "name": "owner", "uid": "u", "controller": controller}]
    return obj


def test_a_spoofed_owner_reference_takes_no_gpu_pod_out_of_kueue():
    """The issue's bypass: a bare pod with the team's label and a controller reference to a
    Job (or a Deployment's ReplicaSet, a StatefulSet) is not gated by Kueue's webhook."""
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "h200"}]}
    for kind in ("Job", "ReplicaSet", "StatefulSet"):
        for extra in ({}, {"nodeName": "gpu01"}, claim):
            spoofed = owned_by(pod("training", None if extra is claim else {"nvidia.com/gpu": 2}, queue("training"),
                                   gated=False, **extra), kind)
            assert gpu_refusals(spoofed) == [OWNER_MESSAGE % "alice", GATE_MESSAGE], (kind, extra)
            # A service account of the team's own namespace (edit impersonates those) is no controller.
            assert gpu_refusals(spoofed, username="system:serviceaccount:training:default") == [
                OWNER_MESSAGE % "system:serviceaccount:training:default", GATE_MESSAGE]
        # Not a controller reference either: a GPU pod of a member carries none.
        assert OWNER_MESSAGE % "alice" in gpu_refusals(owned_by(pod("training", {"nvidia.com/gpu": 1}, queue("training")),
                                                                kind, controller=False))
    # The controllers' own pods: a Job's from the Job controller (the Job was admitted), a
    # ReplicaSet's or StatefulSet's gated by Kueue like any other.
    job_pod = owned_by(pod("training", {"nvidia.com/gpu": 1}, gated=False), "Job")
    assert gpu_refusals(job_pod, username="system:serviceaccount:kube-system:job-controller") == []
    for kind, user in (("ReplicaSet", "replicaset-controller"), ("StatefulSet", "statefulset-controller")):
        gated = owned_by(pod("training", {"nvidia.com/gpu": 1}, queue("training")), kind)
        assert gpu_refusals(gated, username="system:serviceaccount:kube-system:" + user) == []
        ungated = owned_by(pod("training", {"nvidia.com/gpu": 1}, queue("training"), gated=False), kind)
        assert gpu_refusals(ungated, username="system:serviceaccount:kube-system:" + user) == [GATE_MESSAGE]
    # A Kubeflow or KubeRay operator's pod for its (suspended, admitted) workload.
    assert gpu_refusals(owned_by(pod("training", {"nvidia.com/gpu": 1}, gated=False), "RayCluster"),
                        username="system:serviceaccount:ray-system:kuberay-operator") == []
    # A bare GPU pod Kueue did not gate, or one bound by hand, is refused; a CPU pod is no business of the policy.
    assert gpu_refusals(pod("training", {"nvidia.com/gpu": 1}, queue("training"), gated=False)) == [GATE_MESSAGE]
    assert gpu_refusals(owned_by(pod("training", gated=False), "Job")) == []


def test_owner_references_are_not_added_to_a_gpu_pod_later():
    before = pod("training", {"nvidia.com/gpu": 1}, queue("training"))
    assert gpu_refusals(owned_by(before, "Job"), operation="UPDATE", old=before) == [OWNER_MESSAGE % "alice"]
    # Kept or removed (the garbage collector orphaning it) is fine.
    owned = owned_by(before, "ReplicaSet")
    assert gpu_refusals(owned, operation="UPDATE", old=owned) == []
    assert gpu_refusals(before, operation="UPDATE", old=owned) == []
    assert gpu_refusals(owned_by(before, "Job"), operation="UPDATE", old=before,
                        username="system:serviceaccount:kube-system:generic-garbage-collector") == []


def test_only_kueue_removes_its_scheduling_gate():
    for requests in ({"nvidia.com/gpu": 1}, None):
        gated = pod("training", requests, queue("training"))
        released = pod("training", requests, queue("training"), gated=False)
        for user in ("alice", "system:serviceaccount:training:default", "system:serviceaccount:kube-system:job-controller",
                     "gpushare-admin"):
            assert gpu_refusals(released, operation="UPDATE", old=gated, username=user) == [
                "only Kueue (%s) removes the scheduling gate kueue.x-k8s.io/admission, when it admits the pod's "
                "workload; not %s" % (KUEUE, user)], user
        assert gpu_refusals(released, operation="UPDATE", old=gated, username=KUEUE) == []
        # Other updates of a gated or admitted pod (labels, finalizers) stay allowed.
        assert gpu_refusals(gated, operation="UPDATE", old=gated) == []
        assert gpu_refusals(released, operation="UPDATE", old=released) == []


def test_termination_grace_of_gpu_pods_is_bounded():
    message = ["terminationGracePeriodSeconds of a GPU pod in a team namespace is at most 300: Kueue's preemption "
               "and reclaim wait for it before the GPUs are free"]
    for seconds, refused in ((30, False), (300, False), (301, True), (86400, True)):
        for make in (pod, job):
            got = gpu_refusals(make("training", {"nvidia.com/gpu": 1}, queue("training"),
                                    terminationGracePeriodSeconds=seconds))
            assert got == (message if refused else []), (make, seconds, got)
    assert gpu_refusals(pod("training", labels=queue("training"), terminationGracePeriodSeconds=86400,
                            resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}])) == message
    assert gpu_refusals(pod("training", labels=queue("training"), terminationGracePeriodSeconds=86400)) == []


def test_dra_only_through_templates_kueue_counts():
    by_name = pod("training", labels=queue("training"), resourceClaims=[{"name": "g", "resourceClaimName": "shared"}])
    assert gpu_refusals(by_name) == [
        "DRA devices in team namespaces come only from a resourceClaimTemplateName (Kueue counts the template's "
        "devices), never a shared resourceClaimName"]
    assert gpu_refusals(pod("training", labels=queue("training"),
                            resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}])) == []


def test_device_requests_past_the_device_plugin():
    """cdi.k8s.io/ annotations (CDI's device request by annotation) and mounts under the
    NVIDIA runtime's device-list directory, in any team pod, GPU or not."""
    cdi = "cdi.k8s.io/ annotations ask the container runtime for devices past Kueue: remove them"
    mount = ("a volume mounted under /var/run/nvidia-container-devices is a device list for the NVIDIA runtime: "
             "mount it elsewhere")
    annotated = pod("training", labels=queue("training"))
    annotated["metadata"]["annotations"] = {"cdi.k8s.io/gpu": "nvidia.com/gpu=all", "note": "x"}
    assert gpu_refusals(annotated) == [cdi]
    plain = pod("training", labels=queue("training"))
    plain["metadata"]["annotations"] = {"note": "x"}
    assert gpu_refusals(plain) == []
    # Added while the pod waits for Kueue: refused; one a pod already had (before the policy) is kept.
    assert gpu_refusals(annotated, operation="UPDATE", old=plain) == [cdi]
    assert gpu_refusals(annotated, operation="UPDATE", old=annotated) == []
    for path in ("/var/run/nvidia-container-devices", "/var/run/nvidia-container-devices/all"):
        mounted = pod("training", labels=queue("training"), init=True)
        mounted["spec"]["initContainers"][0]["volumeMounts"] = [{"name": "v", "mountPath": path}]
        assert gpu_refusals(mounted) == [mount], path
        assert gpu_refusals(job("training", labels=queue("training"), initContainers=mounted["spec"]["initContainers"]))
    elsewhere = pod("training", labels=queue("training"))
    elsewhere["spec"]["containers"][0]["volumeMounts"] = [{"name": "v", "mountPath": "/var/run/app"}]
    assert gpu_refusals(elsewhere) == []
    debug = pod("training")
    debug["spec"]["ephemeralContainers"] = [{"name": "d", "image": "busybox", "volumeMounts": [
        {"name": "v", "mountPath": "/var/run/nvidia-container-devices/0"}]}]
    assert gpu_refusals(debug, operation="UPDATE", resource="pods/ephemeralcontainers", old=pod("training")) == [mount]


def workload(kind="Job", suspend=True, ns="training", **spec):
    group = {"Job": "batch/v1", "JobSet": "jobset.x-k8s.io/v1alpha2", "PyTorchJob": "kubeflow.org/v1",
             "RayCluster": "ray.io/v1"}[kind]
    body = dict(spec)
    if kind == "PyTorchJob":
        body["runPolicy"] = {"suspend": suspend}
    else:
        body["suspend"] = suspend
    return {"apiVersion": group, "kind": kind, "metadata": {"name": "w", "namespace": ns, "labels": queue(ns)},
            "spec": body}


RESOURCES = {"Job": ("batch", "jobs"), "JobSet": ("jobset.x-k8s.io", "jobsets"), "PyTorchJob": ("kubeflow.org", "pytorchjobs"),
             "RayCluster": ("ray.io", "rayclusters"), "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
             "ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates")}


def start_refusals(obj, policy=STARTS_POLICY, **request):
    group, resource = RESOURCES[obj["kind"]]
    return no_errors(admit(*policy, obj, group=group, resource=resource, **request))


def test_only_kueue_starts_a_suspended_workload():
    for kind in ("Job", "JobSet", "PyTorchJob", "RayCluster"):
        started = "only Kueue starts a suspended %s in namespace training: it clears suspend when it admits the " \
                  "workload; not alice" % kind
        assert start_refusals(workload(kind, False), operation="UPDATE", old=workload(kind, True)) == [started]
        assert start_refusals(workload(kind, False), operation="UPDATE", old=workload(kind, True), username=KUEUE) == []
        # JobSet's controller resumes the child Jobs of an admitted JobSet.
        assert start_refusals(workload(kind, False), operation="UPDATE", old=workload(kind, True),
                              username="system:serviceaccount:jobset-system:jobset-controller-manager") == []
        # A member may suspend its own workload, or keep it as it is; Kueue preempts by suspending.
        assert start_refusals(workload(kind, True), operation="UPDATE", old=workload(kind, False)) == []
        assert start_refusals(workload(kind, True), operation="UPDATE", old=workload(kind, False), username=KUEUE) == []
        assert start_refusals(workload(kind, False), operation="UPDATE", old=workload(kind, False)) == []
        # Created running: Kueue's webhook suspends every workload it manages, unless it names an owner Kueue manages.
        assert start_refusals(workload(kind, False)) == [
            "%s w in namespace training must be created suspended: Kueue suspends every workload it manages and starts "
            "it when it admits it (it leaves alone one that names a workload as its owner: remove "
            "metadata.ownerReferences)" % kind]
        assert start_refusals(workload(kind, True)) == []
        assert start_refusals(workload(kind, False), username="system:serviceaccount:kube-system:cronjob-controller") == []
    # A Job without the field (not defaulted yet) counts as running.
    bare = workload("Job")
    del bare["spec"]["suspend"]
    assert start_refusals(bare)
    # Without a queue label it is the queue-label rule's (gpushare-gpu-through-kueue refuses it if it asks for a GPU).
    bare["metadata"]["labels"] = {}
    assert start_refusals(bare) == []


def test_parallelism_of_a_running_job_is_raised_only_by_kueue():
    refusal = ["parallelism of the running Job w is raised only by Kueue (it admitted the Job's pods at the parallelism "
               "it had); not alice"]
    assert start_refusals(workload("Job", False, parallelism=8), operation="UPDATE",
                          old=workload("Job", False, parallelism=2)) == refusal
    assert start_refusals(workload("Job", False, parallelism=1), operation="UPDATE",
                          old=workload("Job", False, parallelism=2)) == []
    assert start_refusals(workload("Job", False, parallelism=8), operation="UPDATE",
                          old=workload("Job", False, parallelism=2), username=KUEUE) == []
    # While suspended the Job is not admitted: Kueue reads the new parallelism when it admits it.
    assert start_refusals(workload("Job", True, parallelism=8), operation="UPDATE",
                          old=workload("Job", True, parallelism=2)) == []


def claim_template(kind, *classes, ns="research"):
    requests = [{"name": "r%d" % i, "exactly": {"deviceClassName": c}} for i, c in enumerate(classes)]
    spec = {"devices": {"requests": requests}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "t", "namespace": ns},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def test_dra_claims_ask_only_for_device_classes_kueue_counts():
    # mixed-fleet maps DeviceClass gpu.nvidia.com to gpushare.cluster/dra-gpu (its inventory's DRA pool).
    objects = {"%s/%s" % (o["kind"], o["metadata"]["name"]): o
               for o in yaml.safe_load_all({f["path"]: f["content"] for f in manifest_files(PLANS["mixed-fleet"])}
                                           ["00-namespaces.yaml"])}
    policy = (objects["ValidatingAdmissionPolicy/gpushare-only-kueue-starts"],
              objects["ValidatingAdmissionPolicyBinding/gpushare-only-kueue-starts"])
    ns = policy[1]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"][0]
    assert start_refusals(claim_template("ResourceClaimTemplate", "gpu.nvidia.com", ns=ns), policy) == []
    for classes in (("mig.nvidia.com",), ("gpu.nvidia.com", "vfio.gpu.nvidia.com")):
        assert start_refusals(claim_template("ResourceClaimTemplate", *classes, ns=ns), policy) == [
            "ResourceClaimTemplate t asks for a device class Kueue does not count: team namespaces may ask only for "
            "gpu.nvidia.com"]
    alternatives = claim_template("ResourceClaimTemplate", ns=ns)
    alternatives["spec"]["spec"]["devices"]["requests"] = [{"name": "r", "firstAvailable": [
        {"name": "a", "deviceClassName": "gpu.nvidia.com"}, {"name": "b", "deviceClassName": "mig.nvidia.com"}]}]
    assert start_refusals(alternatives, policy)
    # Without DRA in the Plan nothing is counted; claims come only from templates.
    assert start_refusals(claim_template("ResourceClaimTemplate", "gpu.nvidia.com", ns="training"))
    claim = "ResourceClaims in team namespaces are made from a pod's ResourceClaimTemplate by the resource claim " \
            "controller, which Kueue counts; a claim made by hand is not"
    assert start_refusals(claim_template("ResourceClaim", "gpu.nvidia.com", ns=ns), policy) == [claim]
    assert start_refusals(claim_template("ResourceClaim", "gpu.nvidia.com", ns=ns), policy,
                          username="system:serviceaccount:kube-system:resource-claim-controller") == []


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_the_plans_own_claim_templates_pass(example):
    """The ResourceClaimTemplates the dra_driver role applies (as an admin, no controller)
    into team namespaces ask only for what Kueue counts."""
    objects = admission(example)
    policy = (objects["ValidatingAdmissionPolicy/gpushare-only-kueue-starts"],
              objects["ValidatingAdmissionPolicyBinding/gpushare-only-kueue-starts"])
    templates = [o for objs in render(PLANS[example]).values() for o in objs if o["kind"] == "ResourceClaimTemplate"]
    for template in templates:
        assert start_refusals(template, policy, username="gpushare-admin") == [], template["metadata"]
    assert templates or example != "mixed-fleet"     # mixed-fleet has a DRA pool: the check is not empty


def priority_refusals(obj, **request):
    request.setdefault("group", {"Pod": "", "Job": "batch", "CronJob": "batch"}.get(obj["kind"], "apps"))
    return no_errors(admit(*PRIORITY_POLICY, obj, **request))


def with_class(obj, name):
    obj = copy.deepcopy(obj)
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = name
    return obj


def test_workload_priority_class_belongs_to_the_team():
    # training (100) may use only its own; data-science (500) its own and training's;
    # production every class.
    allowed = {"training": {"training"}, "data-science": {"data-science", "training"},
               "prod-serving": {"production", "data-science", "training"}}
    for ns, mine in allowed.items():
        for wpc in ("production", "data-science", "training", "made-up"):
            for make in (pod, job):
                refusal = priority_refusals(with_class(make(ns), wpc))
                assert (refusal == []) == (wpc in mine), (ns, wpc, refusal)
    refusal = priority_refusals(with_class(job("training"), "production"))
    assert refusal[0] == "WorkloadPriorityClass production is not for namespace training: it may use training"
    # Any kind Kueue manages: a Deployment with production's class.
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "training",
                                                                              "labels": {}},
                  "spec": {"template": {"spec": pod()["spec"]}}}
    assert priority_refusals(with_class(deployment, "production"))


def test_workload_priority_class_kept_on_update_refused_when_changed():
    before = with_class(job("training"), "production")
    assert priority_refusals(before, operation="UPDATE", old=before) == []
    assert priority_refusals(with_class(job("training"), "production"), operation="UPDATE",
                             old=with_class(job("training"), "training"))
    assert priority_refusals(with_class(job("training"), "production"), operation="UPDATE", old=job("training"))


def test_system_and_production_pod_priority_classes():
    for ns in ("training", "data-science", "prod-serving"):
        for system in ("system-cluster-critical", "system-node-critical"):
            assert priority_refusals(pod(ns, priorityClassName=system)), (ns, system)
            assert priority_refusals(job(ns, priorityClassName=system)), (ns, system)
    assert priority_refusals(pod("prod-serving", priorityClassName="gpushare-production")) == []
    assert priority_refusals(job("prod-serving", priorityClassName="gpushare-production")) == []
    for ns in ("training", "data-science"):
        refusal = priority_refusals(pod(ns, priorityClassName="gpushare-production"))
        assert refusal == ["PriorityClass gpushare-production is production's: only for pods in prod-serving"], refusal
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "training", "labels": {}},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": pod(priorityClassName="system-node-critical")["spec"]}}}}}
    assert priority_refusals(cron)
    # An allow-list: a class an admin or add-on installs later is no team's.
    for ns, mine in (("training", "none"), ("data-science", "none"), ("prod-serving", "gpushare-production")):
        for name in ("batch-low", "high-priority"):
            assert priority_refusals(pod(ns, priorityClassName=name)) == [
                "PriorityClass %s is not for pods in namespace %s: it may use %s (a workload's priority is its "
                "kueue.x-k8s.io/priority-class label)" % (name, ns, mine)]
            assert priority_refusals(job(ns, priorityClassName=name))
    # A pod that already had the class (it predates the policy) can still be updated (finalized).
    old = pod("training", priorityClassName="system-cluster-critical")
    assert priority_refusals(old, operation="UPDATE", old=old) == []


def test_objects_without_labels_or_spec_pass():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "training"}, "data": {}}
    assert priority_refusals(config_map, group="") == []
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "training"}}
    assert priority_refusals(event, group="") == []
    # A custom resource with a spec.template of another shape, or none.
    for template in ("a string", {"metadata": {}}, None):
        custom = {"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "training"},
                  "spec": {"template": template}}
        assert priority_refusals(custom, group="example.com") == []


def test_production_class_stays_production_even_for_a_team_of_equal_priority():
    variables = example_day()
    training = next(t for t in variables["gpushare_teams"] if t["name"] == "training")
    training["priority"] = 1000     # production's own value
    plan = build_plan(variables)
    policy = next(o for o in render(plan)["namespaces"] if o["metadata"]["name"] == "gpushare-team-priority"
                  and o["kind"] == "ValidatingAdmissionPolicy")
    assert literal(policy, "allowedClasses")["training"] == ["data-science", "training"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_report_names_each_pod_security_exception(example):
    from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
    report = report_markdown(PLANS[example])
    for t in teams_as_written(example):
        for ns in t.get("namespaces", [t["name"]]):
            named = "`%s` (team %s): baseline" % (ns, t["name"]) in report
            assert named == (t.get("pod_security") == "baseline"), (ns, report)


# --- cel_subset against cel-go -------------------------------------------------------------

def test_cel_subset_answers_as_cel_go(monkeypatch):
    """Every request the tests above make, judged again by cel-go at the version of the
    twin's kube-apiserver (tests/twin/celcheck.sh): the same refusals, message for message."""
    run = subprocess.run(["bash", str(ROOT / "tests" / "twin" / "celcheck.sh")], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("tests/twin/celcheck.sh failed; cel-go is built from its Go module, so Go and a module proxy "
                    "are needed:\n%s" % run.stderr, pytrace=False)
    cases, answers = [], []
    evaluate = admit

    def recording(policy, binding, obj, **request):
        refusals = evaluate(policy, binding, obj, **request)
        resource = request.get("resource") or obj["kind"].lower() + "s"
        namespace = obj["metadata"].get("namespace")
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        selected = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
        if namespace in selected and any(resource in r["resources"] or ("*" in r["resources"] and "/" not in resource)
                                         for r in rules):
            cases.append(copy.deepcopy({"policy": policy, "object": obj, "oldObject": request.get("old"), "request": {
                "operation": request.get("operation", "CREATE"), "namespace": namespace,
                "userInfo": {"username": request.get("username", "alice")}}}))
            answers.append(refusals)
        return refusals

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "admit", recording)
    for name, test in sorted(vars(module).items()):
        if name.startswith("test_") and name != "test_cel_subset_answers_as_cel_go" and callable(test):
            params = inspect.signature(test).parameters
            if "requests" in params:
                for requests in ({"nvidia.com/gpu": 1}, {"nvidia.com/mig-1g.18gb": 1}, {"nvidia.com/gpu.shared": 2}):
                    test(requests)
            elif not params:
                test()
    assert len(cases) > 50 and sum(1 for a in answers if a) > 20, (len(cases), answers)
    by_cel_go = json.loads(subprocess.run([run.stdout.strip()], input=json.dumps(cases), capture_output=True, text=True,
                                          check=True).stdout)
    for case, ours, theirs in zip(cases, answers, by_cel_go):
        assert ours == theirs, (case["object"], case["request"])
