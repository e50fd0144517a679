"""Smoke test of the cluster twin: Kueue lends idle GPU quota and takes it back.

Needs a running twin (tests/twin/up.sh); fails, never skips, without one. Run with
    .venv/bin/python -m pytest tests/twin -q
Every object carries a per-run suffix, so the test can run again on the same twin.

The story, on two KWOK nodes with 4 whole GPUs and 7 MIG slices each:
1. team-b (nominal 1 GPU) submits a 2-GPU Job; Kueue admits it by borrowing team-a's idle
   GPU and the scheduler binds its pod to a KWOK node, where KWOK runs it.
2. team-a (nominal 1 GPU, reclaimWithinCohort: Any) submits a 1-GPU Job; Kueue preempts
   team-b's borrowing workload and admits team-a's.
"""
from __future__ import annotations

import secrets

import pytest

from twinclient import ApiError, Twin, condition, is_true

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.18gb"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
POOL_LABEL = "gpushare.example/pool"
TIMEOUT = 120


@pytest.fixture(scope="module")
def twin(twin_session) -> Twin:
    """The session's client (conftest.py), which fails when the twin is not up."""
    return twin_session


@pytest.fixture(scope="module")
def rid() -> str:
    return secrets.token_hex(3)


def test_control_plane_versions(twin):
    version = twin.get("/version")
    assert version["gitVersion"] == twin.env["TWIN_KUBE_VERSION"]
    assert version["major"] == "1"
    # DRA is served (GA in 1.34), for the later DRA tests.
    dra = {r["name"] for r in twin.get("/apis/resource.k8s.io/v1")["resources"]}
    assert {"deviceclasses", "resourceclaims", "resourceslices"} <= dra
    kueue = {r["name"] for r in twin.get(KUEUE)["resources"]}
    assert {"clusterqueues", "localqueues", "resourceflavors", "cohorts", "workloads"} <= kueue


@pytest.fixture(scope="module")
def gpu_nodes(twin, rid):
    """Two fake nodes that KWOK manages (annotation selector), tainted as KWOK advises."""
    names = [f"kwok-gpu-{rid}-{i}" for i in range(2)]
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "4", MIG: "7"}
    for name in names:
        twin.create("/api/v1/nodes", {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {"kwok.x-k8s.io/node": "fake"},
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", POOL_LABEL: rid},
            },
            "spec": {"taints": [KWOK_TAINT]},
            # Extended resources advertised as the NVIDIA device plugin would.
            "status": {"capacity": resources, "allocatable": resources},
        })

    def ready_node(name):
        node = twin.get(f"/api/v1/nodes/{name}")
        return node if is_true(node, "Ready") else None

    for name in names:
        node = twin.wait_for(f"node {name} Ready (KWOK heartbeat)",
                             lambda n=name: ready_node(n), timeout=TIMEOUT)
        assert node["status"]["allocatable"][GPU] == "4"
        assert node["status"]["allocatable"][MIG] == "7"
    return names


def test_kwok_nodes_advertise_gpus(gpu_nodes):
    assert len(gpu_nodes) == 2


def cluster_queue(name, cohort, flavor, ns, reclaim):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": reclaim, "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{
                "coveredResources": [GPU],
                "flavors": [{"name": flavor, "resources": [{"name": GPU, "nominalQuota": 1}]}],
            }],
        },
    }


@pytest.fixture(scope="module")
def queues(twin, rid, gpu_nodes):
    flavor, cohort = f"gpu-{rid}", f"gpu-pool-{rid}"
    twin.create(f"{KUEUE}/resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor},
        "spec": {"nodeLabels": {POOL_LABEL: rid},
                 "tolerations": [dict(KWOK_TAINT, operator="Equal")]},
    })
    twin.create(f"{KUEUE}/cohorts", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": cohort}})
    teams = {}
    for team, reclaim in (("team-a", "Any"), ("team-b", "LowerPriority")):
        ns, cq = f"{team}-{rid}", f"{team}-{rid}"
        twin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": ns}})
        twin.create(f"{KUEUE}/clusterqueues", cluster_queue(cq, cohort, flavor, ns, reclaim))
        twin.create(f"{KUEUE}/namespaces/{ns}/localqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": team, "namespace": ns}, "spec": {"clusterQueue": cq}})
        teams[team] = {"ns": ns, "cq": cq, "lq": team}
    for team in teams.values():
        twin.wait_for(f"ClusterQueue {team['cq']} Active", lambda t=team: is_true(
            twin.get(f"{KUEUE}/clusterqueues/{t['cq']}"), "Active"), timeout=TIMEOUT)
        twin.wait_for(f"LocalQueue {team['lq']} Active", lambda t=team: is_true(
            twin.get(f"{KUEUE}/namespaces/{t['ns']}/localqueues/{t['lq']}"), "Active"),
            timeout=TIMEOUT)
    return {"flavor": flavor, "cohort": cohort, **teams}


def gpu_job(name, ns, queue, gpus):
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 0,
            "template": {
                # KWOK's pod-complete stage finishes a Job's pod after this delay: 1 h
                # keeps the job running for the whole test.
                "metadata": {"annotations": {
                    "pod-complete.stage.kwok.x-k8s.io/delay": "1h",
                    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "train",
                        "image": "registry.invalid/gpushare/train:1",  # KWOK never pulls
                        "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
                    }],
                },
            },
        },
    }


def workload_of(twin, ns, job_name):
    items = twin.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]
    for wl in items:
        if any(ref.get("kind") == "Job" and ref.get("name") == job_name
               for ref in wl["metadata"].get("ownerReferences", [])):
            return wl
    return None


def admitted_workload(twin, ns, job_name):
    wl = workload_of(twin, ns, job_name)
    return wl if wl and is_true(wl, "Admitted") else None


def running_pod(twin, ns, job_name, nodes):
    pods = twin.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=batch.kubernetes.io/job-name%3D"
                    f"{job_name}")["items"]
    for pod in pods:
        if (pod["spec"].get("nodeName") in nodes and pod["status"].get("phase") == "Running"
                and not pod["metadata"].get("deletionTimestamp")):
            return pod
    return None


def flavor_usage(twin, cq, flavor):
    status = twin.get(f"{KUEUE}/clusterqueues/{cq}").get("status", {})
    for fl in status.get("flavorsReservation") or []:
        if fl["name"] == flavor:
            for res in fl["resources"]:
                if res["name"] == GPU:
                    return res
    return None


def test_borrow_then_reclaim(twin, rid, queues, gpu_nodes):
    a, b, flavor = queues["team-a"], queues["team-b"], queues["flavor"]

    # 1. team-b asks for 2 GPUs with a nominal quota of 1: it must borrow team-a's idle one.
    twin.create(f"/apis/batch/v1/namespaces/{b['ns']}/jobs", gpu_job("borrower", b["ns"], b["lq"], 2))
    wl_b = twin.wait_for("team-b's workload admitted",
                         lambda: admitted_workload(twin, b["ns"], "borrower"), timeout=TIMEOUT)
    admission = wl_b["status"]["admission"]
    assert admission["clusterQueue"] == b["cq"]
    assert admission["podSetAssignments"][0]["flavors"][GPU] == flavor

    def borrowing_one():
        usage = flavor_usage(twin, b["cq"], flavor)
        return usage if usage and usage.get("borrowed") == "1" else None

    usage = twin.wait_for("team-b's borrowed GPU in its ClusterQueue status", borrowing_one,
                          timeout=TIMEOUT)
    assert usage["total"] == "2"

    pod_b = twin.wait_for("team-b's pod Running on a KWOK node",
                          lambda: running_pod(twin, b["ns"], "borrower", gpu_nodes),
                          timeout=TIMEOUT)
    # Kueue injected the flavor's node labels and toleration into the admitted pod.
    assert pod_b["spec"]["nodeSelector"][POOL_LABEL] == rid
    assert any(t.get("key") == KWOK_TAINT["key"] for t in pod_b["spec"].get("tolerations", []))

    # 2. team-a wants its nominal GPU back: Kueue preempts the borrower at once.
    twin.create(f"/apis/batch/v1/namespaces/{a['ns']}/jobs", gpu_job("reclaimer", a["ns"], a["lq"], 1))

    def borrower_preempted():
        wl = workload_of(twin, b["ns"], "borrower")
        evicted = condition(wl, "Evicted") if wl else None
        return wl if evicted and evicted["status"] == "True" and evicted["reason"] == "Preempted" \
            else None

    wl_b = twin.wait_for("team-b's workload evicted by preemption", borrower_preempted,
                         timeout=TIMEOUT)
    preempted = condition(wl_b, "Preempted")
    assert preempted and preempted["status"] == "True", wl_b["status"]
    assert preempted["reason"] in ("InCohortReclamation", "InCohortReclaimWhileBorrowing")

    wl_a = twin.wait_for("team-a's workload admitted",
                         lambda: admitted_workload(twin, a["ns"], "reclaimer"), timeout=TIMEOUT)
    assert wl_a["status"]["admission"]["clusterQueue"] == a["cq"]
    twin.wait_for("team-a's pod Running on a KWOK node",
                  lambda: running_pod(twin, a["ns"], "reclaimer", gpu_nodes), timeout=TIMEOUT)

    # The borrower is suspended again and waits: 2 GPUs no longer fit beside team-a's 1.
    job_b = twin.get(f"/apis/batch/v1/namespaces/{b['ns']}/jobs/borrower")
    assert job_b["spec"]["suspend"] is True
    assert not is_true(workload_of(twin, b["ns"], "borrower"), "Admitted")


def test_webhook_rejects_invalid_queue(twin, rid, queues):
    """Kueue's validating webhook, reached by the apiserver on loopback, refuses a
    lendingLimit above nominal (a rule the CRD schema does not carry)."""
    bad = cluster_queue(f"bad-{rid}", queues["cohort"], queues["flavor"], "nowhere", "Never")
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 2
    with pytest.raises(ApiError) as err:
        twin.create(f"{KUEUE}/clusterqueues", bad)
    assert err.value.status == 403, err.value
    assert 'admission webhook "vclusterqueue.kb.io" denied' in err.value.body["message"]
    assert "lendingLimit" in err.value.body["message"]
