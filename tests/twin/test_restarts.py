"""A crash of kube-apiserver or of Kueue in the middle of a roles run is survived by
re-running: the re-run succeeds, the run after it changes nothing, and the twin holds the
state the Plan asks for. Before them: the night switch refused while notebooks hold the GPU
it re-partitions, then the same switch with allow_disruption (cordon, evict the notebooks only,
switch, uncordon).

Each run is playbooks/site.yml (gpu_operator, kueue stages) switching the sharing
window; tests/twin/restart.sh SIGKILLs the process at a chosen task (TRIGGER), keeps it down
2 s and starts it again with the same command. Runs after the example
day (the twin is then in the base state) and leaves the base state behind.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from conftest import EXAMPLE, NO_INSTALL, ROOT, run_playbook, site_command, twin_inventory, write_results
from twinclient import is_true

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
# When each crash happens: kube-apiserver as the gpu_operator role patches the node's labels
# (the MIG change), Kueue as the kueue role applies its objects (its webhooks refuse then).
TRIGGER = {"kube-apiserver": "TASK [gpushare.cluster.gpu_operator : Labels | Patch the nodes whose labels change",
           "kueue": "TASK [gpushare.cluster.kueue : Apply | Team namespaces"}
RESULTS: dict = {}


def interrupted_run(component: str, at: str) -> dict:
    """site.yml (gpu_operator, kueue) at ``at``, with ``component`` crashed and restarted when
    its TRIGGER prints."""
    cmd, env = site_command(EXAMPLE, ["gpu_operator", "kueue"], NO_INSTALL, at)
    env["TWIN_PYTHON"] = sys.executable
    restarted = None
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        out = []
        for line in proc.stdout:
            out.append(line)
            if restarted is None and line.startswith(TRIGGER[component]):
                start = time.monotonic()
                subprocess.run([str(ROOT / "tests/twin/restart.sh"), component, "2"], env=env, check=True, timeout=180)
                restarted = round(time.monotonic() - start, 1)
        rc = proc.wait(timeout=600)
    assert restarted is not None, "".join(out)[-4000:]
    failed, task = [], None
    for line in out:
        task = line.strip(" *\n") if line.startswith("TASK [") else task
        if line.startswith(("fatal:", "failed:")) and task not in failed:
            failed.append(task)
    return {"rc": rc, "restart_s": restarted, "stdout": "".join(out), "failed_tasks": failed}


def contains(live, planned) -> bool:
    """Everything the Plan sets is in the live object (the apiserver adds defaults)."""
    if isinstance(planned, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in planned.items())
    if isinstance(planned, list):
        return isinstance(live, list) and len(live) == len(planned) and all(map(contains, live, planned))
    return live == planned


def cluster_queues_active(twin) -> bool:
    return all(is_true(cq, "Active") for cq in twin.get(f"{KUEUE}/clusterqueues")["items"])


def test_the_night_switch_is_refused_while_notebooks_hold_gpu_2(twin_session, example_plan, roles_apply):
    """The example day leaves the morning notebooks running on GPU 2. Switching to the night
    layout would re-partition GPU 2 under them: the gpu_operator role refuses and names them,
    the node keeps its labels."""
    twin = twin_session
    node = example_plan["nodes"][0]
    before = twin.get(f"/api/v1/nodes/{node['name']}")["metadata"]["labels"]
    refused = run_playbook(EXAMPLE, at="19:00", check=False)
    assert refused["rc"] != 0
    assert "The plan changes nvidia.com/mig.config on gpu01 (GPU pods: data-science/notebook-0-morning" in refused["stdout"]
    assert "prod-serving" not in refused["stdout"].split("GPU pods:")[1].split(")")[0]  # vLLM and MIG services are not in the way
    assert twin.get(f"/api/v1/nodes/{node['name']}")["metadata"]["labels"] == before


def test_allow_disruption_evicts_only_the_pods_on_the_changing_gpu(tmp_path_factory, twin_session, example_plan,
                                                                   roles_apply):
    """The same switch with gpushare_policy.allow_disruption: true: the gpu_operator role
    cordons gpu01, deletes the notebooks holding GPU 2 (the GPU the night re-partitions), and
    only them: production's vLLM and MIG services on the other GPUs keep running (same pod
    UIDs). Then it changes the MIG layout, waits for the MIG Manager and uncordons. Then every
    team's Jobs are deleted and the base state is applied again, so the crash tests below
    start from an idle cluster in the base state."""
    twin = twin_session
    node = example_plan["nodes"][0]["name"]
    namespaces = [ns for team in example_plan["teams"] for ns in team["namespaces"]]
    on_node = {p["metadata"]["uid"]: p["metadata"]["namespace"] + "/" + p["metadata"]["name"]
               for p in twin.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]
               # pods of earlier tests that ended (finished, or being deleted) are not counted
               if p["metadata"]["namespace"] in namespaces and not p["metadata"].get("deletionTimestamp")
               and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")}
    notebooks = {uid for uid, name in on_node.items() if name.startswith("data-science/notebook-")}
    others = set(on_node) - notebooks
    # Production's services (vLLM on GPU 0, the MIG services on GPU 1): nobody else may stop them
    # (Kueue may preempt other teams' jobs when the night quotas apply).
    prod_namespaces = example_plan["teams"][0]["namespaces"]
    jobs = {ns + "/" + j["metadata"]["name"] for ns in prod_namespaces
            for j in twin.get(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"]}
    # ... whose Job still exists (earlier tests end theirs; their pods go away by themselves)
    production = {uid for uid in others if on_node[uid].split("/")[0] in prod_namespaces
                  and on_node[uid].rsplit("-", 1)[0] in jobs}
    assert example_plan["teams"][0]["production"]
    assert notebooks, "the example day left no notebook pod on " + node
    assert production, "the example day left no production pod on " + node
    inventory = twin_inventory(tmp_path_factory, "disruption", policy={"allow_disruption": True})
    drained = run_playbook(inventory, at="19:00")
    evict_task = drained["stdout"].split("Labels | Evict the pods on the re-partitioned GPUs before the MIG change]", 1)[1]
    evicted = evict_task.split("TASK [", 1)[0]
    assert all("item=%s)" % on_node[uid] in evicted for uid in notebooks), evicted[:2000]
    assert not any("item=%s)" % on_node[uid] in evicted for uid in others), evicted[:2000]
    live_pods = {p["metadata"]["uid"] for p in twin.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}")["items"]}
    assert not notebooks & live_pods, "an evicted notebook pod is still there"
    assert production <= live_pods, "production's pods on the GPUs that keep their layout were stopped: %s" % sorted(
        on_node[uid] for uid in production - live_pods)
    live = twin.get(f"/api/v1/nodes/{node}")
    assert not live["spec"].get("unschedulable"), "the node was left cordoned"
    night = next(w for w in example_plan["windows"] if w["name"] == "night")["nodes"][0]
    assert {k: live["metadata"]["labels"].get(k) for k in night["labels"]} == night["labels"]
    RESULTS["drain_switch_s"] = drained["seconds"]
    # The crash tests below start from an idle cluster in the base state.
    for ns in namespaces:
        for job in twin.get(f"/apis/batch/v1/namespaces/{ns}/jobs")["items"]:
            twin.request("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}",
                         {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
                         ok=(200, 202, 404))
    twin.wait_for("the teams' pods gone", lambda: not any(
        twin.get(f"/api/v1/namespaces/{ns}/pods")["items"] for ns in namespaces), timeout=120)
    run_playbook(EXAMPLE, at="07:00")


@pytest.mark.parametrize("component, at, window", [("kube-apiserver", "19:00", "night"), ("kueue", "07:00", None)])
def test_a_crash_mid_run_is_survived_by_re_running(twin_session, example_plan, roles_apply, component, at, window):
    twin = twin_session
    crashed = interrupted_run(component, at)
    rerun = run_playbook(EXAMPLE, at=at)
    after = run_playbook(EXAMPLE, at=at)
    RESULTS[component] = {"interrupted_run_rc": crashed["rc"], "failed_tasks": crashed["failed_tasks"],
                          "restart_s": crashed["restart_s"],
                          "rerun_changed": rerun["counts"]["changed"], "rerun_s": rerun["seconds"]}
    write_results("restarts", RESULTS)
    assert after["counts"]["changed"] == 0, after["stdout"][-4000:]
    state = next(w for w in example_plan["windows"] if w["name"] == window)["nodes"][0] if window else example_plan["nodes"][0]
    labels = twin.get(f"/api/v1/nodes/{state['name']}")["metadata"]["labels"]
    assert {k: labels.get(k) for k in state["labels"]} == state["labels"]
    twin.wait_for("ClusterQueues Active", lambda: cluster_queues_active(twin), timeout=60)
    wanted = {o["metadata"]["name"]: o for o in (
        next(w for w in example_plan["windows"] if w["name"] == window)["kueue"]["objects"] if window
        else example_plan["kueue"]["objects"]) if o["kind"] == "ClusterQueue"}
    for name, obj in wanted.items():
        live = twin.get(f"{KUEUE}/clusterqueues/{name}")
        assert contains(live["spec"], obj["spec"]), (name, live["spec"])
