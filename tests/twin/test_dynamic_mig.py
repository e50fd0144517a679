"""Dynamic MIG on the cluster twin: the real kube-apiserver and kube-scheduler of Kubernetes
1.35.4 with DRAPartitionableDevices, the real Kueue v0.19.2 with the Plan's counter mapping,
and a stand-in kubelet plugin publishing one H200 in the DRA driver's DynamicMIG shape
(dynamic_mig_slices.py; placements from NVIDIA's MIG User Guide, not the planner's catalogue).

This module starts a twin of its own (up.sh with GPUSHARE_TWIN_KUBE_FEATURE_GATES and the
Plan's Kueue ``resources``, in a state directory of its own) and stops it at the end.

Shown: the apiserver keeps the counter set (a twin without the gate would drop it silently);
the scheduler allocates a 1g + 1g + 2g + 3g pod on one H200 on distinct memory slices and
refuses a further 1g (no start on the eighth slice); Kueue charges each claim the memory counter
and, under the planned quota, admits seven 1g.18gb jobs and holds the eighth (which a quota of
the GPU's whole memory counter would have admitted and no placement could hold), and every
admitted job's pod is scheduled; a service resized from 1g.18gb to 2g.35gb gets a 2g device under
its new template and quota while another service's pod keeps its slice (same pod, same device, the
node never cordoned); production (reclaimWithinCohort: Any) takes back the counter quota research
borrowed: a research Job is preempted (InCohortReclamation) and production's pod gets the slice.
"""

from __future__ import annotations

import copy
import os
import subprocess

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from dynamic_mig_slices import device_classes, slices
from inventories import ROOT, load_example
from twinclient import Twin, condition, read_env

NODE = "h200-dynamic"
TWIN = ROOT / "tests" / "twin"
LONG = "20m"


def _inventory() -> dict:
    """The example with one dynamic H200 (inference's) and one 1g.18gb service."""
    inventory = copy.deepcopy(load_example("static-and-dynamic-mig"))
    inventory["gpushare_nodes"][NODE] = {"gpu_model": "h200", "gpu_count": 1, "dra": True,
                                         "gpus": [{"index": 0, "mode": "mig-dynamic", "team": "inference"}]}
    inventory["gpushare_workloads"] = [
        w for w in inventory["gpushare_workloads"] if w["sharing"] != "mig-dynamic"] + [
        {"name": "small", "team": "inference", "kind": "batch", "sharing": "mig-dynamic", "memory_gib": 12}]
    return inventory


@pytest.fixture(scope="module", name="plan")
def fixture_plan() -> dict:
    return build_plan(_inventory())


@pytest.fixture(scope="module", name="twin")
def fixture_twin(plan, tmp_path_factory):
    state = tmp_path_factory.mktemp("twin-dynamic-mig")
    env = dict(os.environ, GPUSHARE_TWIN_STATE=str(state),
               GPUSHARE_TWIN_KUBE_FEATURE_GATES="DRAPartitionableDevices=true",
               GPUSHARE_TWIN_KUEUE_EXTRA_CONFIG=yaml.safe_dump(
                   {"resources": plan["kueue"]["configuration"]["resources"]}, sort_keys=False))
    up = subprocess.run(["bash", str(TWIN / "up.sh")], env=env, capture_output=True, text=True, check=False)
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        twin = Twin(read_env(state / "twin.env"))
        for obj in device_classes():
            twin.create("/apis/resource.k8s.io/v1/deviceclasses", obj)
        labels = dict([n for n in plan["nodes"] if n["name"] == NODE][0]["labels"], **{
            "nvidia.com/gpu.product": "NVIDIA-H200"})
        twin.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": NODE, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"}}})
        for obj in slices(NODE):
            twin.create("/apis/resource.k8s.io/v1/resourceslices", obj)
        for ns in ("inference", "research"):
            twin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        _apply_kueue(twin, plan)
        for template in plan["dra"]["claim_templates"]:
            twin.create("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates"
                        % template["metadata"]["namespace"], template)
        yield twin
    finally:
        subprocess.run(["bash", str(TWIN / "down.sh")], env=env, capture_output=True, text=True, check=False)


def _apply_kueue(twin: Twin, plan: dict) -> None:
    plural = {"ResourceFlavor": "resourceflavors", "Cohort": "cohorts", "WorkloadPriorityClass": "workloadpriorityclasses",
              "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}
    for obj in plan["kueue"]["objects"]:
        ns = obj["metadata"].get("namespace")
        path = "/apis/kueue.x-k8s.io/v1beta2/%s%s" % ("namespaces/%s/" % ns if ns else "", plural[obj["kind"]])
        twin.wait_for("Kueue's webhook takes %s" % obj["metadata"]["name"], lambda: _try_create(twin, path, obj), 60)


def _try_create(twin, path, obj):
    try:
        twin.create(path, obj)
        return True
    except Exception:               # the webhook may not answer yet
        return False


def _claim(name: str, profile: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "inference"},
            "spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '%s'" % profile}}]}}]}}}


def _pod(name: str, claims: list[str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "inference"},
            "spec": {"resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
                     "containers": [{"name": "main", "image": "registry.invalid/app:1",
                                     "resources": {"claims": [{"name": c} for c in claims]}}]}}


def _allocated(twin, name):
    claim = twin.get("/apis/resource.k8s.io/v1/namespaces/inference/resourceclaims/%s" % name)
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    return results[0]["device"] if results else None


def test_the_apiserver_keeps_the_counter_set(twin):
    stored = twin.get("/apis/resource.k8s.io/v1/resourceslices/%s-counters" % NODE)
    assert stored["spec"]["sharedCounters"][0]["name"] == "gpu-0-counter-set"
    devices = twin.get("/apis/resource.k8s.io/v1/resourceslices/%s-devices" % NODE)["spec"]["devices"]
    assert all(d.get("consumesCounters") for d in devices)


def test_the_scheduler_places_1g_1g_2g_3g_and_refuses_an_eighth_slice(twin):
    profiles = {"a-1g": "1g.18gb", "b-1g": "1g.18gb", "c-2g": "2g.35gb", "d-3g": "3g.71gb"}
    for name, profile in profiles.items():
        twin.create("/apis/resource.k8s.io/v1/namespaces/inference/resourceclaims", _claim(name, profile))
    twin.create("/api/v1/namespaces/inference/pods", _pod("four-slices", list(profiles)))
    devices = twin.wait_for("the four claims allocated", lambda: [d for d in (_allocated(twin, c) for c in profiles) if d]
                            if all(_allocated(twin, c) for c in profiles) else None, 60)
    used = []
    for device in devices:           # gpu-0-mig-<profile>-<id>-<start>
        start = device.split("-")[-1]
        size = {"1g18gb": 1, "2g35gb": 2, "3g71gb": 4}[device.split("-")[3]]
        used += range(int(start), int(start) + size)
    assert len(used) == len(set(used)) == 8
    twin.create("/apis/resource.k8s.io/v1/namespaces/inference/resourceclaims", _claim("e-1g", "1g.18gb"))
    twin.create("/api/v1/namespaces/inference/pods", _pod("one-more", ["e-1g"]))

    def unschedulable():
        pod = twin.get("/api/v1/namespaces/inference/pods/one-more")
        return pod if (condition(pod, "PodScheduled") or {}).get("reason") == "Unschedulable" else None

    pod = twin.wait_for("the fifth slice refused", unschedulable, 60)
    assert not pod["spec"].get("nodeName")
    for pod_name in ("four-slices", "one-more"):
        twin.request("DELETE", "/api/v1/namespaces/inference/pods/%s?gracePeriodSeconds=0" % pod_name, ok=(200, 202, 404))
    for claim in list(profiles) + ["e-1g"]:
        twin.delete("/apis/resource.k8s.io/v1/namespaces/inference/resourceclaims/%s" % claim)


def _job(name: str, template: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "inference", "labels": {"kueue.x-k8s.io/queue-name": "inference"}},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": LONG,
                                             "pod-complete.stage.kwok.x-k8s.io/jitter-delay": LONG}},
                "spec": {"restartPolicy": "Never",
                         "resourceClaims": [{"name": "mig", "resourceClaimTemplateName": template}],
                         "containers": [{"name": "main", "image": "registry.invalid/app:1",
                                         "resources": {"claims": [{"name": "mig"}]}}]}}}}


def test_planned_quota_keeps_out_the_mix_no_placement_holds(twin, plan):
    """One H200 has seven 1g.18gb starts. Its memory counter (143360 MiB) would let Kueue admit
    eight 1g.18gb claims (8 x 16384 = 131072 MiB); the planned quota admits seven."""
    template = next(w["claim_template"] for w in plan["dra"]["dynamic_mig"]["workloads"] if w["name"] == "small")
    assert plan["dra"]["dynamic_mig"]["guarantees"][0]["unplaceable_mix"] == {"1g.18gb": 8}
    for i in range(8):
        twin.create("/apis/batch/v1/namespaces/inference/jobs", _job("small-%d" % i, template))

    def workloads():
        items = twin.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/inference/workloads")["items"]
        return items if len(items) == 8 and all(condition(w, "QuotaReserved") for w in items) else None

    items = twin.wait_for("eight Kueue workloads decided", workloads, 90)
    admitted = [w for w in items if (condition(w, "QuotaReserved") or {}).get("status") == "True"]
    held = [w for w in items if (condition(w, "QuotaReserved") or {}).get("status") == "False"]
    assert (len(admitted), len(held)) == (7, 1)
    assert "insufficient unused quota for gpushare.cluster/mig-memory" in condition(held[0], "QuotaReserved")["message"]
    usage = admitted[0]["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    assert usage == {"gpushare.cluster/mig-memory": "16Gi"}

    def bound():
        pods = twin.get("/api/v1/namespaces/inference/pods")["items"]
        running = [p for p in pods if p["spec"].get("nodeName") == NODE]
        return running if len(running) == 7 else None

    twin.wait_for("every admitted job's pod scheduled on its slice", bound, 90)


def test_a_resize_takes_a_new_slice_and_moves_no_other_pod(twin, plan):
    """small is resized from 1g.18gb to 2g.35gb (mig_profile): its new template and quota are
    applied, its own Job is replaced, and the new pod gets a 2g device while steady's pod keeps
    running on its 1g slice, same pod, same device, the node never cordoned."""
    for i in range(8):
        twin.request("DELETE", "/apis/batch/v1/namespaces/inference/jobs/small-%d?propagationPolicy=Background" % i,
                     ok=(200, 202, 404))
    twin.wait_for("the 1g jobs' pods gone", lambda: not [
        p for p in twin.get("/api/v1/namespaces/inference/pods")["items"] if p["metadata"]["name"].startswith("small-")], 90)
    inventory = _inventory()
    inventory["gpushare_workloads"].append({"name": "steady", "team": "inference", "kind": "serving",
                                            "sharing": "mig-dynamic", "memory_gib": 12})
    before = build_plan(inventory)
    for w in inventory["gpushare_workloads"]:
        if w["name"] == "small":
            w.pop("memory_gib")
            w["mig_profile"] = "2g.35gb"
    after = build_plan(inventory)
    for template in before["dra"]["claim_templates"] + after["dra"]["claim_templates"]:
        try:
            twin.create("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % template["metadata"]["namespace"],
                        template)
        except Exception:           # small-1g.18gb exists from the fixture
            pass
    templates = {w["name"]: w["claim_template"] for w in before["dra"]["dynamic_mig"]["workloads"]}
    twin.create("/apis/batch/v1/namespaces/inference/jobs", _job("steady", templates["steady"]))
    twin.create("/apis/batch/v1/namespaces/inference/jobs", _job("small-v1", templates["small"]))

    def pod_of(job):
        pods = [p for p in twin.get("/api/v1/namespaces/inference/pods")["items"]
                if p["metadata"].get("labels", {}).get("job-name") == job and p["spec"].get("nodeName")]
        return pods[0] if pods else None

    steady = twin.wait_for("steady bound", lambda: pod_of("steady"), 90)
    twin.wait_for("small-v1 bound", lambda: pod_of("small-v1"), 90)
    steady_claim = steady["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    steady_device = twin.wait_for("steady's claim allocated", lambda: _allocated(twin, steady_claim), 60)
    # The resize: the new quota, small's old Job replaced by one asking for the new template.
    queue = next(o for o in after["kueue"]["objects"] if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "inference")
    current = twin.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/inference")
    twin.request("PUT", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/inference",
                 dict(queue, metadata=dict(queue["metadata"], resourceVersion=current["metadata"]["resourceVersion"])))
    twin.request("DELETE", "/apis/batch/v1/namespaces/inference/jobs/small-v1?propagationPolicy=Background",
                 ok=(200, 202, 404))
    new_template = next(w["claim_template"] for w in after["dra"]["dynamic_mig"]["workloads"] if w["name"] == "small")
    assert new_template == "small-2g.35gb"
    twin.create("/apis/batch/v1/namespaces/inference/jobs", _job("small-v2", new_template))
    resized = twin.wait_for("small-v2 bound", lambda: pod_of("small-v2"), 90)
    claim = resized["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    device = twin.wait_for("small-v2's claim allocated", lambda: _allocated(twin, claim), 60)
    assert device.startswith("gpu-0-mig-2g35gb-")
    still = twin.get("/api/v1/namespaces/inference/pods/%s" % steady["metadata"]["name"])
    assert still["metadata"]["uid"] == steady["metadata"]["uid"] and not still["metadata"].get("deletionTimestamp")
    assert _allocated(twin, steady_claim) == steady_device
    assert not twin.get("/api/v1/nodes/%s" % NODE)["spec"].get("unschedulable")


def test_production_reclaims_what_research_borrowed(twin, plan):
    """research owns no dynamic GPU and borrows inference's whole counter quota with seven 1g
    Jobs; inference (production, reclaimWithinCohort: Any) then submits one: Kueue evicts a
    research Job and admits inference's, whose pod gets the freed slice."""
    for name in ("steady", "small-v2"):
        twin.request("DELETE", "/apis/batch/v1/namespaces/inference/jobs/%s?propagationPolicy=Background" % name,
                     ok=(200, 202, 404))
    twin.wait_for("inference's pods gone", lambda: not twin.get("/api/v1/namespaces/inference/pods")["items"], 90)
    inventory = _inventory()
    inventory["gpushare_workloads"].append({"name": "scratch", "team": "research", "kind": "batch",
                                            "sharing": "mig-dynamic", "memory_gib": 12})
    borrowed = build_plan(inventory)
    template = next(t for t in borrowed["dra"]["claim_templates"] if t["metadata"]["namespace"] == "research")
    twin.create("/apis/resource.k8s.io/v1/namespaces/research/resourceclaimtemplates", template)
    for i in range(7):
        twin.create("/apis/batch/v1/namespaces/research/jobs", dict(_job("scratch-%d" % i, template["metadata"]["name"]),
                    metadata={"name": "scratch-%d" % i, "namespace": "research",
                              "labels": {"kueue.x-k8s.io/queue-name": "research"}}))

    def admitted(ns):
        return [w for w in twin.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/%s/workloads" % ns)["items"]
                if (condition(w, "Admitted") or {}).get("status") == "True"]

    twin.wait_for("research borrows all seven slices", lambda: len(admitted("research")) == 7, 90)
    twin.create("/apis/batch/v1/namespaces/inference/jobs", _job("reclaim", "small-1g.18gb"))
    twin.wait_for("inference's Job admitted", lambda: admitted("inference"), 90)
    evicted = [w for w in twin.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads")["items"]
               if (condition(w, "Evicted") or {}).get("status") == "True"]
    assert evicted and condition(evicted[0], "Preempted")["reason"] == "InCohortReclamation"

    def bound():
        return [p for p in twin.get("/api/v1/namespaces/inference/pods")["items"] if p["spec"].get("nodeName") == NODE]

    twin.wait_for("inference's pod bound on the freed slice", bound, 90)
