"""MPS applied on the twin: tests/twin/inventory-mps (one server, mps-l40s-01, two L40S with
`mode: mps`, 4 replicas each; team mps-inference) applied by the gpu_operator and kueue roles
(playbooks/site.yml, nothing installed; a second run changes nothing). The node is a KWOK
node made from the Plan's hardware (gpu_nodes.py); what it advertises is written by the
device-plugin stand-in, which reads the ConfigMap the role applied in the upstream format
(advertised.py, k8s-device-plugin README "With CUDA MPS"), never the Plan.

The file sorts last, after test_zz_mixed_fleet.py: applying another inventory prunes the
example's Kueue objects, and Kueue keeps a pruned ClusterQueue that still holds admitted
workloads (the example day's notebooks and services, which test_restarts.py needs) Terminating
until they end, and never makes it Active again: the example could not be applied back.

Checked, against numbers worked out by hand from the inventory's YAML (2 cards x 4 replicas
= 8; the inventory is read here to check it still says so):
- the device-plugin ConfigMap holds the node's config with `sharing.mps` (renameByDefault,
  failRequestsGreaterThanOne, nvidia.com/gpu x 4) and the node is labelled with its key;
- the node advertises `nvidia.com/gpu.shared: 8` (allocatable), and no whole `nvidia.com/gpu`;
- the team's ClusterQueue has a nominal quota of exactly the advertised count;
- a Job asking for one MPS replica, with the team's queue label (on the Job and its pod: team
  namespaces refuse GPU pods without one), is admitted and its pod runs on mps-l40s-01; of
  nine such Jobs eight are admitted and the ninth waits for quota.

Before the first run, the fixture waits until no labelled Kueue object of the earlier tests
is still being deleted (the kueue role refuses to apply one the plan wants). The Jobs and the
node are deleted at the end. Measured numbers go to build/twin/mps.json (or
$GPUSHARE_TWIN_RESULTS).
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml

import gpu_nodes
from conftest import run_playbook, write_results
from twinclient import is_true

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "tests" / "twin" / "inventory-mps"
NODE = "mps-l40s-01"
NAMESPACE = "mps-serving"
QUEUE = "mps-inference"            # the team's LocalQueue (and ClusterQueue): its name
SHARED = "nvidia.com/gpu.shared"
CARDS, REPLICAS = 2, 4             # the inventory's, read by eye (test_mps_inventory_says_so)
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
KUEUE_KINDS = ("localqueues", "clusterqueues", "cohorts", "workloadpriorityclasses", "resourceflavors")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TIMEOUT = 120
RESULTS: dict = {}


def mps_job(name: str) -> dict:
    """A Job of one pod asking for one MPS replica, in the team's queue; KWOK runs the pod until
    the Job is deleted."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {QUEUE_LABEL: QUEUE}},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
            "metadata": {"labels": {QUEUE_LABEL: QUEUE},
                         "annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": "1h",
                                         "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h"}},
            # Pod Security restricted on team namespaces: the Job controller's pod must comply.
            "spec": {"restartPolicy": "Never",
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{
                         "name": "main", "image": "registry.invalid/gpushare/small-models:1",
                         "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                         "resources": {"requests": {SHARED: "1"}, "limits": {SHARED: "1"}}}]}}},
    }


def admitted(twin, name: str) -> bool:
    for wl in twin.get(f"{KUEUE}/namespaces/{NAMESPACE}/workloads")["items"]:
        if any(r.get("kind") == "Job" and r.get("name") == name for r in wl["metadata"].get("ownerReferences", [])):
            return is_true(wl, "Admitted")
    return False


def running_pod(twin, name: str):
    pods = twin.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=batch.kubernetes.io/job-name%3D{name}")["items"]
    return next((p for p in pods if p["status"].get("phase") == "Running"), None)


def deleting(twin) -> list[str]:
    """Kueue objects with a deletion timestamp (pruned by an earlier test's run, kept by Kueue
    until the workloads they admitted are gone)."""
    return ["%s/%s" % (kind, o["metadata"]["name"]) for kind in KUEUE_KINDS
            for o in twin.get(f"{KUEUE}/{kind}")["items"] if o["metadata"].get("deletionTimestamp")]


def _delete_jobs(twin) -> None:
    for job in twin.get(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs")["items"]:
        twin.request("DELETE", f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{job['metadata']['name']}",
                     {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
                     ok=(200, 202, 404))
    twin.wait_for(f"workloads of {NAMESPACE} gone", lambda: not twin.get(f"{KUEUE}/namespaces/{NAMESPACE}/workloads")["items"],
                  timeout=TIMEOUT)


@pytest.fixture(name="mps", scope="module")
def fixture_mps(twin_session):
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
    from inventories import load_dir
    plan = build_plan(load_dir(INVENTORY))      # the node's hardware only
    twin_session.wait_for(f"no Kueue object being deleted (at first: {deleting(twin_session)})",
                          lambda: not deleting(twin_session), timeout=TIMEOUT)
    gpu_nodes.create_nodes(twin_session, plan)
    # The stand-in runs throughout, as the device plugin does (before the role, the node's
    # operator defaults: every GPU whole); the second run starts once the node advertises what
    # the first applied, on a settled cluster.
    sim = gpu_nodes.OperatorSim(twin_session, plan).start()
    runs = {}
    try:
        runs["first"] = run_playbook(INVENTORY, roles=("gpu_operator", "kueue"))
        twin_session.wait_for(f"{NODE} advertising {SHARED}", lambda: twin_session.get(gpu_nodes.node_path(NODE))[
            "status"]["allocatable"].get(SHARED), timeout=TIMEOUT)
        runs["second"] = run_playbook(INVENTORY, roles=("gpu_operator", "kueue"))
        yield runs
    finally:
        _delete_jobs(twin_session)
        sim.stop()
        gpu_nodes.delete_nodes(twin_session, plan)


def test_mps_inventory_says_so():
    """The hand numbers above are the inventory's: read from its YAML, not through the planner."""
    node = yaml.safe_load((INVENTORY / "host_vars" / f"{NODE}.yml").read_text())["gpushare_node"]
    assert node["gpu_count"] == CARDS
    assert [(g["index"], g["mode"], g["replicas"]) for g in node["gpus"]] == [(i, "mps", REPLICAS) for i in range(CARDS)]


def changed_tasks(run: dict) -> list[str]:
    return [block.split("]", 1)[0] for block in run["stdout"].split("TASK [")[1:] if "\nchanged: " in block]


def test_mps_roles_apply_and_second_run_changes_nothing(mps):
    assert mps["second"]["counts"]["changed"] == 0, (changed_tasks(mps["second"]), mps["second"]["stdout"][-4000:])
    RESULTS["apply_s"] = {"first": mps["first"]["seconds"], "second": mps["second"]["seconds"]}


def test_mps_device_plugin_config_applied(twin_session, mps):
    labels = twin_session.get(gpu_nodes.node_path(NODE))["metadata"]["labels"]
    key = labels[gpu_nodes.DP_LABEL]
    data = twin_session.get(f"/api/v1/namespaces/{gpu_nodes.GPU_OPERATOR_NAMESPACE}/configmaps/"
                            "gpushare-device-plugin-config")["data"]
    assert yaml.safe_load(data[key]) == {
        "version": "v1", "flags": {"migStrategy": "none"},
        "sharing": {"mps": {"renameByDefault": True, "failRequestsGreaterThanOne": True,
                            "resources": [{"name": "nvidia.com/gpu", "replicas": REPLICAS}]}}}


def test_mps_node_advertises_the_replicated_count_and_the_quota_equals_it(twin_session, mps):
    def shared():
        allocatable = twin_session.get(gpu_nodes.node_path(NODE))["status"]["allocatable"]
        return allocatable if allocatable.get(SHARED) == str(CARDS * REPLICAS) else None

    allocatable = twin_session.wait_for(f"{NODE} advertising {SHARED}", shared, timeout=TIMEOUT)
    assert allocatable.get("nvidia.com/gpu", "0") == "0"
    cq = twin_session.get(f"{KUEUE}/clusterqueues/{QUEUE}")
    quotas = {"%s %s" % (f["name"], r["name"]): int(str(r["nominalQuota"])) for g in cq["spec"]["resourceGroups"]
              for f in g["flavors"] for r in f["resources"]}
    assert list(quotas.values()) == [int(allocatable[SHARED])] and SHARED in next(iter(quotas)), quotas
    twin_session.wait_for("ClusterQueue active", lambda: is_true(
        twin_session.get(f"{KUEUE}/clusterqueues/{QUEUE}"), "Active"), timeout=TIMEOUT)
    RESULTS["advertised"] = int(allocatable[SHARED])
    RESULTS["quota"] = quotas


def test_mps_job_admitted_and_runs_on_the_mps_node_until_the_quota_is_spent(twin_session, mps):
    start = time.monotonic()
    twin_session.create(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", mps_job("mps-client-0"))
    twin_session.wait_for("mps-client-0 admitted", lambda: admitted(twin_session, "mps-client-0"), timeout=TIMEOUT)
    pod = twin_session.wait_for("mps-client-0 running", lambda: running_pod(twin_session, "mps-client-0"),
                                timeout=TIMEOUT)
    assert pod["spec"]["nodeName"] == NODE
    RESULTS["time_to_running_s"] = round(time.monotonic() - start, 2)
    names = ["mps-client-%d" % i for i in range(1, CARDS * REPLICAS + 1)]     # 8 more: one too many
    for name in names:
        twin_session.create(f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs", mps_job(name))
    twin_session.wait_for("the quota's 8 clients admitted", lambda: sum(
        admitted(twin_session, n) for n in ["mps-client-0"] + names) == CARDS * REPLICAS or None, timeout=TIMEOUT)
    time.sleep(3)      # Kueue had time to admit a ninth if the quota allowed it
    waiting = [n for n in ["mps-client-0"] + names if not admitted(twin_session, n)]
    assert len(waiting) == 1, waiting
    RESULTS["admitted"], RESULTS["waiting"] = CARDS * REPLICAS, len(waiting)


def test_team_dropped_while_its_jobs_run_then_applied_back(twin_session, mps, tmp_path_factory):
    """What a user meets applying one inventory after another on one cluster: an inventory
    without the team (renamed mps-batch) prunes its ClusterQueue while its 8 Jobs hold quota;
    Kueue keeps the queue Terminating; running that inventory again changes nothing; applying
    the team's inventory back is refused, naming the queue, with nothing applied; once the
    Jobs are gone it applies and the queue is Active."""
    twin = twin_session
    renamed = tmp_path_factory.mktemp("mps") / "inventory-mps-batch"
    shutil.copytree(INVENTORY, renamed)
    for path in renamed.rglob("*.yml"):
        path.write_text(path.read_text().replace(QUEUE, "mps-batch"))
    RESULTS["team_dropped_s"] = run_playbook(renamed, roles=("kueue",))["seconds"]
    held = twin.get(f"{KUEUE}/clusterqueues/{QUEUE}")["metadata"]
    assert held.get("deletionTimestamp") and "kueue.x-k8s.io/resource-in-use" in held["finalizers"], held
    again = run_playbook(renamed, roles=("kueue",))
    assert again["counts"]["changed"] == 0, (changed_tasks(again), again["stdout"][-4000:])

    refused = run_playbook(INVENTORY, roles=("kueue",), check=False)
    assert refused["rc"] != 0
    message = next(line for line in refused["stdout"].splitlines() if line.startswith("fatal:"))
    assert f"The plan applies ClusterQueue//{QUEUE}, which the cluster is deleting" in message, message
    assert is_true(twin.get(f"{KUEUE}/clusterqueues/mps-batch"), "Active")      # not pruned: nothing applied
    RESULTS["refusal"] = message

    _delete_jobs(twin)
    twin.wait_for(f"ClusterQueue {QUEUE} gone", lambda: QUEUE not in [
        cq["metadata"]["name"] for cq in twin.get(f"{KUEUE}/clusterqueues")["items"]], timeout=TIMEOUT)
    run_playbook(INVENTORY, roles=("kueue",))
    assert is_true(twin.get(f"{KUEUE}/clusterqueues/{QUEUE}"), "Active")
    assert "mps-batch" not in [cq["metadata"]["name"] for cq in twin.get(f"{KUEUE}/clusterqueues")["items"]]


def test_zz_results():
    write_results("mps", RESULTS)
