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


def submit(client, obj) -> tuple[int, str]:
    """Creates ``obj`` with dryRun=All; (HTTP status, the refusal's message or '')."""
    ns = obj["metadata"]["namespace"]
    base = f"/api/v1/namespaces/{ns}/pods" if obj["kind"] == "Pod" else f"/apis/batch/v1/namespaces/{ns}/jobs"
    try:
        client.request("POST", base + "?" + urllib.parse.urlencode({"dryRun": "All"}), obj)
        return 201, ""
    except ApiError as err:
        return err.status, (err.body or {}).get("message", "") if isinstance(err.body, dict) else str(err.body)


def refused(client, obj, because: str) -> str:
    """Waits until ``obj`` is refused (a new policy takes a moment to load) with a message
    containing ``because``; returns the message."""
    def refusal():
        answer = submit(client, obj)
        return answer if answer[0] in (400, 403, 422) and because in answer[1] else None
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
