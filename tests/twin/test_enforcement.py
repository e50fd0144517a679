"""Teams cannot go around the split: the example Plan's admission policies, Pod Security
labels and PriorityClass, applied by the kueue role (conftest's roles_apply), judged by the
twin's real kube-apiserver (ValidatingAdmissionPolicy, Pod Security admission) with Kueue's
webhooks in the path.

Every request is made as a team member (Impersonate-User / Impersonate-Group: the groups of
the inventory's ``members``), so RBAC sees what a member's kubectl would. Requests expected
to pass use dryRun=All: admission runs in full, nothing is stored. The expected answers come
from what a member may do by the issue (docs/security.md), not from the rendered policy.
"""
from __future__ import annotations

import copy
import urllib.parse

import pytest

from conftest import write_results
from twinclient import ApiError

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.18gb"
TIMEOUT = 60
RESULTS: dict = {}
# What Pod Security "restricted" asks of every container (kubernetes.io/docs/concepts/security/pod-security-standards).
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod(name, ns, requests=None, labels=None, **spec) -> dict:
    container = {"name": "main", "image": "registry.invalid/gpushare/app:1", "securityContext": dict(RESTRICTED_CONTAINER)}
    if requests:
        container["resources"] = {"requests": dict(requests), "limits": dict(requests)}
    body = {"restartPolicy": "Never", "securityContext": dict(RESTRICTED_POD), "containers": [container]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": body}


def job(name, ns, requests, labels) -> dict:
    template = pod(name, ns, requests)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"backoffLimit": 0, "template": {"spec": template["spec"]}}}


# Where each kind the tests create lives (API prefix, resource).
PATHS = {"Pod": ("/api/v1", "pods"), "Job": ("/apis/batch/v1", "jobs"), "Deployment": ("/apis/apps/v1", "deployments"),
         "StatefulSet": ("/apis/apps/v1", "statefulsets"), "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims"),
         "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates")}


def collection(obj) -> str:
    prefix, resource = PATHS[obj["kind"]]
    return f"{prefix}/namespaces/{obj['metadata']['namespace']}/{resource}"


def message_of(err: ApiError) -> str:
    return (err.body or {}).get("message", "") if isinstance(err.body, dict) else str(err.body)


def submit(client, obj) -> tuple[int, str]:
    """Creates ``obj`` with dryRun=All; (HTTP status, the refusal's message or '')."""
    try:
        client.request("POST", collection(obj) + "?" + urllib.parse.urlencode({"dryRun": "All"}), obj)
        return 201, ""
    except ApiError as err:
        return err.status, message_of(err)


def refused(client, obj, because) -> str:
    """Waits until ``obj`` is refused (a new policy takes a moment to load) with a message
    containing ``because`` (or one of them, a tuple); returns the message."""
    reasons = because if isinstance(because, tuple) else (because,)

    def refusal():
        answer = submit(client, obj)
        return answer if answer[0] in (400, 403, 422) and any(r in answer[1] for r in reasons) else None
    answer = client.wait_for(f"{obj['kind']} {obj['metadata']['name']} refused", refusal, timeout=TIMEOUT, interval=0.5)
    return answer[1]


def accepted(client, obj) -> None:
    status, message = submit(client, obj)
    assert status == 201, (obj["kind"], obj["metadata"], status, message)


def team(plan, name) -> dict:
    return next(t for t in plan["teams"] if t["name"] == name)


@pytest.fixture(name="members", scope="module")
def fixture_members(twin_session, roles_apply, example_plan):
    """(client, namespace, queue) for a member of training, production and data-science."""
    out = {}
    for name in ("training", "production", "data-science"):
        t = team(example_plan, name)
        out[name] = (twin_session.as_member(f"{name}-member", t["members"][0]), t["namespaces"][0], t["local_queue"])
    return out


@pytest.fixture(name="nvidia_runtime_class", scope="module")
def fixture_nvidia_runtime_class(twin_session):
    """The GPU Operator's RuntimeClass (the twin has no operator): without it the RuntimeClass
    admission plugin would refuse the pod before the policy sees it."""
    path = "/apis/node.k8s.io/v1/runtimeclasses"
    twin_session.request("POST", path, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                        "metadata": {"name": "nvidia"}, "handler": "nvidia"}, ok=(201, 409))
    yield "nvidia"
    twin_session.delete(f"{path}/nvidia")


def test_gpu_without_the_team_queue_is_refused(members):
    client, ns, queue = members["training"]
    for requests in ({GPU: 1}, {MIG: 1}, {"nvidia.com/gpu.shared": 1}):
        message = refused(client, pod("no-queue", ns, requests), "come only through Kueue")
        RESULTS.setdefault("gpu_without_queue", message)
        refused(client, job("no-queue", ns, requests, {}), "come only through Kueue")
        # Another team's queue is no way around it either.
        other = members["production"][2]
        refused(client, pod("foreign-queue", ns, requests, {"kueue.x-k8s.io/queue-name": other}), "come only through Kueue")
    accepted(client, pod("with-queue", ns, {GPU: 1}, {"kueue.x-k8s.io/queue-name": queue}))
    accepted(client, job("with-queue", ns, {GPU: 1}, {"kueue.x-k8s.io/queue-name": queue}))
    # A pod asking for no GPU needs no queue label from the policy (Kueue holds it for one).
    accepted(client, pod("cpu-only", ns))


def test_dra_claim_without_the_team_queue_is_refused(members):
    client, ns, queue = members["training"]
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "any"}]}
    refused(client, pod("dra-no-queue", ns, **claim), "come only through Kueue")


def test_production_priority_is_refused_to_training(members):
    client, ns, queue = members["training"]
    labels = {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": "production"}
    RESULTS["production_priority_in_training"] = refused(
        client, job("jump-the-queue", ns, {GPU: 1}, labels), "WorkloadPriorityClass production")
    refused(client, pod("jump-the-queue", ns, {GPU: 1}, labels), "WorkloadPriorityClass production")
    # Its own class is fine.
    accepted(client, job("own-priority", ns, {GPU: 1}, dict(labels, **{"kueue.x-k8s.io/priority-class": "training"})))


def test_system_and_production_priority_classes_are_refused_to_training(members):
    client, ns, queue = members["training"]
    labels = {"kueue.x-k8s.io/queue-name": queue}
    RESULTS["system_priority_in_training"] = refused(
        client, pod("critical", ns, labels=labels, priorityClassName="system-cluster-critical"), "cluster's own pods")
    refused(client, pod("critical", ns, labels=labels, priorityClassName="system-node-critical"), "cluster's own pods")
    refused(client, pod("prod-class", ns, labels=labels, priorityClassName="gpushare-production"), "production's")


def test_privileged_pod_is_refused(members):
    client, ns, queue = members["training"]
    bad = pod("root-on-the-node", ns, labels={"kueue.x-k8s.io/queue-name": queue})
    bad["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    RESULTS["privileged_in_training"] = refused(client, bad, "violates PodSecurity")
    host = pod("host-path", ns, labels={"kueue.x-k8s.io/queue-name": queue},
               volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    refused(client, host, "violates PodSecurity")
    # data-science is baseline (the inventory's exception): root is allowed, privileged is not.
    ds_client, ds_ns, ds_queue = members["data-science"]
    as_root = pod("notebook", ds_ns, labels={"kueue.x-k8s.io/queue-name": ds_queue})
    del as_root["spec"]["securityContext"], as_root["spec"]["containers"][0]["securityContext"]
    accepted(ds_client, as_root)
    refused(client, dict(copy.deepcopy(as_root), metadata=dict(as_root["metadata"], namespace=ns)), "violates PodSecurity")
    privileged = copy.deepcopy(as_root)
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    refused(ds_client, privileged, "violates PodSecurity")


def test_visible_devices_env_and_nvidia_runtime_are_refused(members, nvidia_runtime_class):
    client, ns, queue = members["training"]
    labels = {"kueue.x-k8s.io/queue-name": queue}
    env = pod("all-gpus", ns, labels=labels)
    env["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    RESULTS["visible_devices_env"] = refused(client, env, "NVIDIA_VISIBLE_DEVICES")
    RESULTS["nvidia_runtime"] = refused(client, pod("runtime", ns, labels=labels, runtimeClassName=nvidia_runtime_class),
                                        "runtimeClassName nvidia")


def test_production_members_may_do_what_is_theirs(members):
    client, ns, queue = members["production"]
    labels = {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": "production"}
    accepted(client, job("vllm", ns, {GPU: 1}, labels))
    accepted(client, pod("vllm", ns, {GPU: 1}, labels, priorityClassName="gpushare-production"))
    accepted(client, pod("embeddings", ns, {MIG: 1}, labels))
    # The rules hold for production too: no GPU outside its queue, no node-level pods.
    refused(client, pod("no-queue", ns, {GPU: 1}), "come only through Kueue")
    refused(client, pod("critical", ns, labels=labels, priorityClassName="system-node-critical"), "cluster's own pods")
    bad = pod("root-on-the-node", ns, labels=labels)
    bad["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    refused(client, bad, "violates PodSecurity")
    write_results("enforcement", RESULTS)


# --- issue 34: Kueue the only way to a GPU ----------------------------------------------------
# A member of training, with nothing but its team's edit role, tries the bypasses the issue
# found (owner references Kueue leaves alone, updates never checked, deny-lists, DRA claims);
# each is refused by the rule named in docs/security.md. Meanwhile production's Job and
# training's honest workloads (Job, Deployment, StatefulSet, pod group, notebook pod) are
# admitted through their queues. Kueue's preemption and reclaim under these policies:
# test_example_day.py's test_production_reclaims, which runs after this file.

SHARED = "nvidia.com/mig-7g.141gb.shared"
GATE = "kueue.x-k8s.io/admission"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NEVER_FITS = {GPU: 8}     # more than gpu01 has: Kueue keeps it suspended (gated) for good
RUNS = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h", "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h"}
QUICK = 1                 # the pods' termination grace: the controllers' deletions at teardown take no 30 s
OWNER = "are written by the controller that creates it"
GATED = "starts only when Kueue admits it"


def merge_patch(client, obj, patch) -> tuple[int, str]:
    """PATCHes ``obj`` (merge patch) for real; (HTTP status, the refusal's message or '')."""
    path = f"{collection(obj)}/{obj['metadata']['name']}"
    try:
        client.request("PATCH", path, patch, content_type="application/merge-patch+json")
        return 200, ""
    except ApiError as err:
        return err.status, message_of(err)


def owner_ref(obj, kind=None) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": kind or obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def template_of(name, ns, requests, labels) -> dict:
    """A pod template of ``name`` (labelled app: name) with KWOK's run-for-an-hour annotation."""
    spec = pod(name, ns, requests, terminationGracePeriodSeconds=QUICK)["spec"]
    spec.pop("restartPolicy")
    return {"metadata": {"labels": dict(labels, app=name), "annotations": dict(RUNS)}, "spec": spec}


def honest_workloads(ns, queue) -> list[dict]:
    """training's honest use: a Job (its own whole GPU) and, on data-science's idle shared
    replicas, a Deployment, a StatefulSet, a two-pod group and a notebook pod."""
    label = {"kueue.x-k8s.io/queue-name": queue}
    train = job("honest-train", ns, {GPU: 1}, label)
    train["spec"]["template"]["metadata"] = {"labels": {"app": "honest-train"}, "annotations": dict(RUNS)}
    train["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = QUICK
    serve = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "honest-serve", "namespace": ns,
                                                                         "labels": dict(label)},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "honest-serve"}},
                      "template": template_of("honest-serve", ns, {SHARED: 1}, label)}}
    shard = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "honest-shard", "namespace": ns,
                                                                          "labels": dict(label)},
             "spec": {"replicas": 1, "serviceName": "honest-shard", "selector": {"matchLabels": {"app": "honest-shard"}},
                      "template": template_of("honest-shard", ns, {SHARED: 1}, label)}}
    group = []
    for i in range(2):
        member = pod(f"honest-group-{i}", ns, {SHARED: 1},
                     dict(label, app="honest-group", **{"kueue.x-k8s.io/pod-group-name": "honest-group"}))
        member["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "2"}
        group.append(member)
    notebook = pod("honest-notebook", ns, {SHARED: 1}, dict(label, app="honest-notebook"))
    return [train, serve, shard, *group, notebook]


def running_pods(twin, ns, app) -> list[dict]:
    selector = urllib.parse.quote(f"app={app}")
    return [p for p in twin.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


@pytest.fixture(name="bypass_targets", scope="module")
def fixture_bypass_targets(twin_session, members):
    """What the member works with, created for real as the member: a GPU Job and a GPU pod
    Kueue never admits (they stay suspended and gated), training's honest workloads and
    production's Job (submitted first, so it is admitted while the member tries). Deleted at
    the end, and their workloads gone, so later twin tests find the quota free."""
    client, ns, queue = members["training"]
    prod_client, prod_ns, prod_queue = members["production"]
    label = {"kueue.x-k8s.io/queue-name": queue}
    prod_job = job("vllm-while-training-tries", prod_ns, {GPU: 1},
                   {"kueue.x-k8s.io/queue-name": prod_queue, "kueue.x-k8s.io/priority-class": "production"})
    prod_job["spec"]["template"]["metadata"] = {"labels": {"app": prod_job["metadata"]["name"]},
                                                "annotations": dict(RUNS)}
    prod_job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = QUICK
    created = [prod_client.create(collection(prod_job), prod_job)]
    decoy = job("decoy", ns, NEVER_FITS, label)
    stuck = pod("stuck", ns, NEVER_FITS, label)
    made = {"decoy": client.create(collection(decoy), decoy), "stuck": client.create(collection(stuck), stuck)}
    created += list(made.values())
    honest = honest_workloads(ns, queue)
    for obj in honest:
        created.append(client.create(collection(obj), obj))
    made.update(honest=honest, production=created[0])
    yield made
    for obj in created:
        twin_session.request("DELETE", f"{collection(obj)}/{obj['metadata']['name']}",
                             {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                              "gracePeriodSeconds": 0}, ok=(200, 202, 404))

    def gone(space):
        # KWOK never ends a deleted running pod (a kubelet would), so Kueue keeps the
        # finalizer of a pod group's pods: the admin removes it, as after a node loss.
        for left in twin_session.get(f"/api/v1/namespaces/{space}/pods")["items"]:
            if left["metadata"].get("deletionTimestamp") and left["metadata"].get("finalizers"):
                twin_session.request("PATCH", f"/api/v1/namespaces/{space}/pods/{left['metadata']['name']}",
                                     {"metadata": {"finalizers": None}},
                                     content_type="application/merge-patch+json", ok=(200, 404))
        return not (twin_session.get(f"{KUEUE}/namespaces/{space}/workloads")["items"]
                    or twin_session.get(f"/api/v1/namespaces/{space}/pods")["items"])
    for space in (ns, prod_ns):
        twin_session.wait_for(f"no workloads or pods left in {space}", lambda space=space: gone(space), timeout=TIMEOUT)


def test_spoofed_owner_references_are_refused(members, bypass_targets):
    """Issue 34 item 1: a bare GPU pod with the team's label and a controller reference to a
    Job of the team (or a ReplicaSet, a StatefulSet), with or without spec.nodeName or a DRA
    claim, is refused by the owner rule; so is a Job that names a Job as its owner (Kueue
    would leave it running)."""
    client, ns, queue = members["training"]
    decoy = bypass_targets["decoy"]
    label = {"kueue.x-k8s.io/queue-name": queue}
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "any"}]}
    for owner_kind in ("Job", "ReplicaSet", "StatefulSet"):
        for name, requests, extra in (("spoof", {GPU: 2}, {}), ("spoof-bound", {GPU: 2}, {"nodeName": "gpu01"}),
                                      ("spoof-dra", None, claim)):
            spoof = pod(name, ns, requests, label, **extra)
            spoof["metadata"]["ownerReferences"] = [owner_ref(decoy, owner_kind)]
            # Kueue gates a pod a ReplicaSet or StatefulSet owns: then spec.nodeName is
            # refused by the API's validation before the policy sees it.
            message = refused(client, spoof, OWNER if owner_kind == "Job" or "nodeName" not in extra
                              else (OWNER, "cannot be set until all schedulingGates have been cleared"))
            RESULTS.setdefault(f"spoofed_owner_{name}", message)
    # Without an owner, Kueue gates the pod, and a gated pod cannot be bound by hand.
    status, message = submit(client, pod("bound", ns, {GPU: 1}, label, nodeName="gpu01"))
    assert status in (403, 422) and ("schedulingGates" in message or GATED in message), (status, message)
    RESULTS["bare_pod_with_node_name"] = message
    # The same trick one level up: a Job owned by a Job is not suspended by Kueue.
    owned_job = job("spoof-job", ns, {GPU: 1}, label)
    owned_job["metadata"]["ownerReferences"] = [owner_ref(decoy)]
    RESULTS["job_with_owner"] = refused(client, owned_job, "must be created suspended")


def test_updates_that_skip_kueue_are_refused(twin_session, members, bypass_targets):
    """Issue 34 item 2: removing Kueue's scheduling gate from a pod Kueue will not admit,
    setting spec.suspend false on a suspended Job. Nothing changed on the twin."""
    client, ns, _queue = members["training"]
    stuck, decoy = bypass_targets["stuck"], bypass_targets["decoy"]
    status, message = merge_patch(client, stuck, {"spec": {"schedulingGates": None}})
    assert status == 403 and "only Kueue" in message and GATE in message, (status, message)
    RESULTS["gate_removed"] = message
    status, message = merge_patch(client, decoy, {"spec": {"suspend": False}})
    assert status == 403 and "only Kueue starts a suspended Job" in message, (status, message)
    RESULTS["unsuspended"] = message
    now = twin_session.get(f"{collection(stuck)}/stuck")
    assert GATE in [g["name"] for g in now["spec"].get("schedulingGates", [])], now["spec"]
    assert twin_session.get(f"{collection(decoy)}/decoy")["spec"]["suspend"] is True


def test_grace_runtime_and_priority_allow_lists(twin_session, members):
    """Issue 34 items 2 and 3: a day of termination grace on a GPU pod; RuntimeClasses and
    PriorityClasses installed later (by an admin or an add-on) are no team's."""
    client, ns, queue = members["training"]
    label = {"kueue.x-k8s.io/queue-name": queue}
    RESULTS["long_grace"] = refused(client, pod("linger", ns, {GPU: 1}, label, terminationGracePeriodSeconds=86400),
                                    "terminationGracePeriodSeconds of a GPU pod")
    accepted(client, pod("linger", ns, {GPU: 1}, label, terminationGracePeriodSeconds=300))
    runtime_path, priority_path = "/apis/node.k8s.io/v1/runtimeclasses", "/apis/scheduling.k8s.io/v1/priorityclasses"
    for name in ("kata-nvidia-gpu", "gpu"):
        twin_session.request("POST", runtime_path, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                                    "metadata": {"name": name}, "handler": name.replace("-", "")},
                             ok=(201, 409))
    twin_session.request("POST", priority_path, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                 "metadata": {"name": "batch-high"}, "value": 100000}, ok=(201, 409))
    try:
        for name in ("kata-nvidia-gpu", "gpu"):
            RESULTS.setdefault("runtime_allow_list", refused(
                client, pod("runtime", ns, {GPU: 1}, label, runtimeClassName=name), f"runtimeClassName {name} is refused"))
        RESULTS["priority_allow_list"] = refused(client, pod("pc", ns, {GPU: 1}, label, priorityClassName="batch-high"),
                                                 "PriorityClass batch-high is not for pods in namespace training")
    finally:
        for name in ("kata-nvidia-gpu", "gpu"):
            twin_session.delete(f"{runtime_path}/{name}")
        twin_session.delete(f"{priority_path}/batch-high")


def test_dra_outside_kueue_is_refused(members):
    """Issue 34, the DRA path: a pod naming a ResourceClaim (not a template), a claim made by
    hand, a template of a device class Kueue does not count (the example has no DRA: none)."""
    client, ns, queue = members["training"]
    label = {"kueue.x-k8s.io/queue-name": queue}
    RESULTS["dra_claim_by_name"] = refused(
        client, pod("shared-claim", ns, labels=label, resourceClaims=[{"name": "gpu", "resourceClaimName": "shared"}]),
        "never a shared resourceClaimName")
    request = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
    for kind, spec, because in (("ResourceClaim", request, "a claim made by hand"),
                                ("ResourceClaimTemplate", {"spec": request}, "device class Kueue does not count")):
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "by-hand", "namespace": ns},
               "spec": spec}
        status, message = submit(client, obj)
        # RBAC may refuse it before admission does; either way the member gets none.
        assert status == 403 and (because in message or "cannot create resource" in message), (kind, status, message)
        RESULTS[f"dra_{kind}"] = message


def test_honest_workloads_and_production_are_admitted(twin_session, members, bypass_targets):
    """No regression for honest users: training's Job, Deployment, StatefulSet, pod group and
    notebook pod run through its queue (Kueue lifts its gates and suspend as the policies
    allow only it), and production's Job runs while the member tries the above. A running
    Job's parallelism is raised only by Kueue."""
    client, ns, _queue = members["training"]
    prod_ns = members["production"][1]
    apps = {"honest-train": 1, "honest-serve": 1, "honest-shard": 1, "honest-group": 2, "honest-notebook": 1}
    twin_session.wait_for("training's honest workloads running", lambda: all(
        len(running_pods(twin_session, ns, app)) == count for app, count in apps.items()), timeout=TIMEOUT)
    prod = bypass_targets["production"]["metadata"]["name"]
    twin_session.wait_for(f"{prod} running", lambda: running_pods(twin_session, prod_ns, prod), timeout=TIMEOUT)
    for pod_ in twin_session.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=app")["items"]:
        assert not pod_["spec"].get("schedulingGates"), pod_["metadata"]["name"]
    train = twin_session.get(f"/apis/batch/v1/namespaces/{ns}/jobs/honest-train")
    assert train["spec"]["suspend"] is False
    status, message = merge_patch(client, train, {"spec": {"parallelism": 2}})
    assert status == 403 and "parallelism of the running Job honest-train is raised only by Kueue" in message, message
    RESULTS["parallelism_raised"] = message
    write_results("enforcement", RESULTS)
