"""The example day (inventory-examples/four-gpu-server, README.md) replayed on the twin, on a compressed clock.

The Plan of inventory-examples/four-gpu-server is applied by the gpu_operator and kueue roles
(conftest's roles_apply, at 08:00); gpu01 is a KWOK node made from the Plan (gpu_nodes.py),
its MIG state and status written by the MIG Manager / device plugin stand-in. One simulated hour lasts GPUSHARE_TWIN_HOUR_S seconds
(default 1). Every workload is a batch/v1 Job that requests only its GPU resource and
carries kueue.x-k8s.io/queue-name; KWOK runs its pod without a container.

    08:00 vLLM (prod-serving, nvidia.com/gpu: 1) is admitted
    09:30 embeddings, classifier, speech-to-text (their MIG profiles) are admitted
    10:00 five notebooks (nvidia.com/mig-7g.141gb.shared: 1 each) are admitted
    13:00 the fine-tune (training, nvidia.com/gpu: 2) waits: insufficient quota
    19:00 the notebooks close; the roles run as scheduled (playbooks/site.yml at
          19:00): the plan module picks the night window, gpu_operator relabels gpu01 (GPU 2
          whole; the stand-in re-partitions and re-advertises), kueue applies the night
          ClusterQueues; the fine-tune is admitted, borrowing data-science's GPU, on gpu01
    05:10 the fine-tune ends (KWOK completes its pod)
    07:00 the roles run again: the base state; the notebooks are admitted again

Then production's reclaim (three tries), and a GPU Job naming a foreign queue refused at admission.
Measured numbers go to build/twin/example-day.json (or $GPUSHARE_TWIN_RESULTS).
"""
from __future__ import annotations

import datetime
import json
import os
import re
import time

import pytest

import gpu_nodes
from conftest import EXAMPLE, run_playbook, write_results
from twinclient import ApiError, condition, is_true

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
SHARED = "nvidia.com/mig-7g.141gb.shared"
HOUR_S = float(os.environ.get("GPUSHARE_TWIN_HOUR_S", "1"))
TIMEOUT = 120
LONG = "1h"  # a KWOK delay longer than the test: the pod runs until its Job is deleted
RESULTS: dict = {"hour_s": HOUR_S}


def gpu_weight(resource: str) -> float:
    """Whole-GPU equivalents of one unit: a MIG slice is its compute slices out of 7, a
    replica of the time-sliced 7g instance one fifth (5 replicas)."""
    if resource == GPU:
        return 1.0
    if resource == SHARED:
        return 1.0 / 5
    m = re.match(r"nvidia\.com/mig-(\d)g\.", resource)
    return int(m.group(1)) / 7.0


def job(name, ns, queue, requests: dict, delay: str = LONG) -> dict:
    requests = {k: str(v) for k, v in requests.items()}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": delay,
                                             "pod-complete.stage.kwok.x-k8s.io/jitter-delay": delay}},
                # What Pod Security "restricted" (the teams' namespaces) asks of a pod.
                "spec": {"restartPolicy": "Never",
                         "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                             "seccompProfile": {"type": "RuntimeDefault"}},
                         "containers": [{
                             "name": "main", "image": "registry.invalid/gpushare/app:1",
                             "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                             "resources": {"requests": requests, "limits": requests}}]},
            },
        },
    }


def workload_of(twin, ns, job_name):
    for wl in twin.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]:
        if any(r.get("kind") == "Job" and r.get("name") == job_name
               for r in wl["metadata"].get("ownerReferences", [])):
            return wl
    return None


def pod_running(twin, ns, job_name):
    pods = twin.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=batch.kubernetes.io/job-name%3D"
                    f"{job_name}")["items"]
    for pod in pods:
        if pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
            return pod
    return None


class Day:
    """The compressed clock and the ledger of admissions and GPU use.

    A discrete-event clock: the simulated time is the time of the current event; `at()`
    sleeps the gap to the next event (hours times HOUR_S seconds) after the current
    event's work (submitting, waiting for admission and pods) is done. Real latencies are
    measured separately with a monotonic clock."""

    def __init__(self, twin, plan):
        self.twin, self.plan = twin, plan
        self.now_h = 8.0
        self.jobs: dict[str, dict] = {}
        self.log: list[str] = []

    def at(self, hhmm: str) -> None:
        h, m = map(int, hhmm.split(":"))
        target = h + m / 60 + (24 if h < 8 else 0)
        assert target >= self.now_h, (hhmm, self.now_h)
        time.sleep((target - self.now_h) * HOUR_S)
        self.now_h = target
        self.log.append(hhmm)

    def submit(self, name, ns, queue, requests, delay=LONG):
        self.twin.create(f"/apis/batch/v1/namespaces/{ns}/jobs", job(name, ns, queue, requests, delay))
        self.jobs[name] = {"ns": ns, "requests": requests, "submitted": time.monotonic(),
                           "admitted": None, "ended": None, "admitted_h": None, "ended_h": None}
        return self.jobs[name]

    def wait_admitted(self, name, since=None):
        rec = self.jobs[name]

        def admitted():
            w = workload_of(self.twin, rec["ns"], name)
            return w if w and is_true(w, "Admitted") else None

        wl = self.twin.wait_for(f"{name} admitted", admitted, timeout=TIMEOUT, interval=0.1)
        rec["admitted"], rec["admitted_h"], rec["ended"], rec["ended_h"] = time.monotonic(), self.now_h, None, None
        rec["cq"] = wl["status"]["admission"]["clusterQueue"]
        rec["time_to_admission_s"] = round(rec["admitted"] - (since or rec["submitted"]), 2)
        return wl

    def end(self, name, delete=True):
        rec = self.jobs[name]
        if delete:
            self.twin.request("DELETE", f"/apis/batch/v1/namespaces/{rec['ns']}/jobs/{name}",
                              {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
                              ok=(200, 202, 404))
        if rec["admitted"] and not rec["ended"]:
            rec["ended"], rec["ended_h"] = time.monotonic(), self.now_h

    def gpu_use(self, until) -> dict:
        """Per ClusterQueue: GPU-seconds of the compressed run (real seconds admitted, times
        whole-GPU equivalents) and GPU-hours of the simulated day (event times)."""
        teams: dict[str, list] = {}
        for rec in self.jobs.values():
            if not rec["admitted"]:
                continue
            gpus = sum(gpu_weight(r) * int(n) for r, n in rec["requests"].items())
            acc = teams.setdefault(rec["cq"], [0.0, 0.0])
            acc[0] += gpus * ((rec["ended"] or until) - rec["admitted"])
            acc[1] += gpus * ((rec["ended_h"] if rec["ended_h"] is not None else self.now_h) - rec["admitted_h"])
        return {t: {"gpu_seconds": round(v[0], 1), "simulated_gpu_hours": round(v[1], 2)}
                for t, v in sorted(teams.items())}


@pytest.fixture(scope="module")
def nodes(twin_session, example_plan, operator_sim, roles_apply):
    """The example's GPU nodes after the roles ran (conftest: operator_sim, roles_apply)."""
    for state in example_plan["nodes"]:
        twin_session.wait_for(f"node {state['name']} Ready", lambda n=state["name"]: is_true(
            twin_session.get(f"/api/v1/nodes/{n}"), "Ready"), timeout=TIMEOUT)
    return operator_sim


def test_gpu_nodes_from_plan(twin_session, example_plan, nodes, roles_apply):
    """The gpu_operator role relabelled the operator's default node; the MIG change went
    pending -> success and the device plugin stand-in advertises the Plan's resources."""
    for state in example_plan["nodes"]:
        live = twin_session.get(f"/api/v1/nodes/{state['name']}")
        expected = dict(state["labels"], **{gpu_nodes.PRODUCT_LABEL: "NVIDIA-H200", gpu_nodes.MIG_STATE_LABEL: "success"})
        assert live["metadata"]["labels"] == expected
        since = json.loads(live["metadata"]["annotations"]["gpushare.cluster/gpu-layout-since"])
        assert sorted(since) == [str(g["index"]) for g in state["gpus"]]  # from all-disabled: every GPU
        assert (state["name"], gpu_nodes.OPERATOR_DEFAULT_MIG_CONFIG) not in [
            (k[0], k[2]) for k in roles_apply["sim_advertised"][1:]]  # left the default state once, for good
        for field in ("capacity", "allocatable"):
            got = live["status"][field]
            for res, count in state["advertised"].items():
                assert got[res] == str(count), (field, res, got)
            assert got["cpu"] == str(state["cpus"]) and got["pods"] == gpu_nodes.PODS
    assert example_plan["nodes"][0]["advertised"][GPU] == 2
    assert example_plan["nodes"][0]["advertised"][SHARED] == 5


def window(plan, name):
    return next(w for w in plan["windows"] if w["name"] == name)


def cluster_queue_usage(twin, cq, resource):
    for fl in (twin.get(f"{KUEUE}/clusterqueues/{cq}").get("status") or {}).get("flavorsReservation") or []:
        for res in fl["resources"]:
            if res["name"] == resource:
                return res
    return None


@pytest.fixture(scope="module")
def day(twin_session, example_plan, nodes):
    return Day(twin_session, example_plan)


def test_example_day(twin_session, example_plan, nodes, day):
    twin, plan = twin_session, example_plan
    wl_by_name = {w["name"]: w for w in plan["workloads"]}
    node = plan["nodes"][0]["name"]

    day.at("08:00")
    day.submit("vllm-chat", "prod-serving", "production", {GPU: 1})
    wl = day.wait_admitted("vllm-chat")
    assert wl["status"]["admission"]["clusterQueue"] == "production"
    twin.wait_for("vLLM pod running", lambda: pod_running(twin, "prod-serving", "vllm-chat"), timeout=TIMEOUT)

    day.at("09:30")
    for name in ("embeddings", "classifier", "speech-to-text"):
        profile = wl_by_name[name]["slices"][0]["profile"]
        day.submit(name, "prod-serving", "production", {f"nvidia.com/mig-{profile}": 1})
    admitted = {name: day.wait_admitted(name) for name in ("embeddings", "classifier", "speech-to-text")}
    for name, wl in admitted.items():
        flavors = wl["status"]["admission"]["podSetAssignments"][0]["flavors"]
        assert list(flavors.values()) == ["h200-141gb-mig"], flavors
        pod = twin.wait_for(f"{name} pod running", lambda n=name: pod_running(twin, "prod-serving", n),
                            timeout=TIMEOUT)
        assert pod["spec"]["nodeName"] == node

    day.at("10:00")
    notebooks = [f"notebook-{i}" for i in range(5)]
    for name in notebooks:
        day.submit(name, "data-science", "data-science", {SHARED: 1})
    for name in notebooks:
        day.wait_admitted(name)
    twin.wait_for("data-science's 5 shared replicas in its ClusterQueue status", lambda: (
        cluster_queue_usage(twin, "data-science", SHARED) or {}).get("total") == "5", timeout=TIMEOUT)

    day.at("13:00")
    # Runs 10 h 10 min once admitted (19:00 to 05:10); KWOK completes its pod then.
    # At least 60 s, so that on a loaded machine the checks after its admission (borrowing in
    # the ClusterQueue status, its pod) still see it run; 05:10 then waits for it to finish.
    runtime_ms = max(int((5 + 24 - 19 + 10 / 60) * HOUR_S * 1000), 60_000)
    day.submit("fine-tune", "training", "training", {GPU: 2}, delay=f"{runtime_ms}ms")

    def quota_refused():
        wl = workload_of(twin, "training", "fine-tune")
        cond = condition(wl, "QuotaReserved") if wl else None
        return cond if cond and cond["status"] == "False" and "insufficient" in cond["message"] else None

    cond = twin.wait_for("fine-tune refused for quota", quota_refused, timeout=TIMEOUT)
    # Kueue v0.19.2: "couldn't assign flavors to pod set main: insufficient unused quota for
    # nvidia.com/gpu in flavor h200-141gb-whole, 1 more needed"
    assert re.search(r"insufficient (unused )?quota for nvidia\.com/gpu ", cond["message"]), cond
    RESULTS["fine_tune_pending_message"] = cond["message"]
    assert not is_true(workload_of(twin, "training", "fine-tune"), "Admitted")

    day.at("19:00")
    for name in notebooks:
        day.end(name)
    twin.wait_for("notebooks' workloads gone", lambda: not any(
        workload_of(twin, "data-science", n) for n in notebooks), timeout=TIMEOUT)
    # Their pods hold GPU 2 until they are gone; the role would refuse the switch before.
    twin.wait_for("notebooks' pods gone", lambda: not twin.get("/api/v1/namespaces/data-science/pods")["items"],
                  timeout=TIMEOUT)
    # The scheduled run of the roles at 19:00 (cron or an AWX schedule on a real cluster):
    # the plan module picks the night window; vLLM and the MIG services keep running (their
    # GPUs are not re-partitioned), the notebooks' GPU goes whole.
    night = window(plan, "night")
    switch_started = time.time()
    run = run_playbook(EXAMPLE, at="19:00")
    RESULTS["window_switch_playbook_s"] = {"19:00": run["seconds"]}
    assert "Sharing window in force at 19:00 UTC: night (19:00-07:00)" in run["stdout"]
    labels = twin.get(f"/api/v1/nodes/{node}")["metadata"]["labels"]
    assert labels[gpu_nodes.MIG_LABEL] == night["nodes"][0]["labels"][gpu_nodes.MIG_LABEL], labels
    assert labels[gpu_nodes.MIG_STATE_LABEL] == "success", labels
    live = twin.get(f"/api/v1/nodes/{node}")["status"]["allocatable"]
    assert live[GPU] == "3" and live[SHARED] == "0", live
    wl = day.wait_admitted("fine-tune")
    # Kueue admits it while the run is still applying (the night ClusterQueues), so the time
    # is the Admitted condition's, to the second.
    admitted_at = datetime.datetime.strptime(condition(wl, "Admitted")["lastTransitionTime"], "%Y-%m-%dT%H:%M:%S%z")
    RESULTS["fine_tune_admitted_after_switch_started_s"] = round(admitted_at.timestamp() - switch_started, 1)
    assert wl["status"]["admission"]["clusterQueue"] == "training"

    def borrowing_one():
        usage = cluster_queue_usage(twin, "training", GPU)
        return usage and usage.get("total") == "2" and usage.get("borrowed") == "1"

    twin.wait_for("training borrows one GPU (ClusterQueue status)", borrowing_one, timeout=TIMEOUT)
    pod = twin.wait_for("fine-tune pod running", lambda: pod_running(twin, "training", "fine-tune"),
                        timeout=TIMEOUT)
    assert pod["spec"]["nodeName"] == node

    day.at("05:10")
    twin.wait_for("fine-tune finished", lambda: is_true(workload_of(twin, "training", "fine-tune"),
                                                        "Finished"), timeout=TIMEOUT, interval=0.1)
    finished = time.monotonic()
    day.end("fine-tune", delete=False)
    RESULTS["fine_tune_ran_s"] = round(finished - day.jobs["fine-tune"]["admitted"], 2)
    RESULTS["fine_tune_planned_run_s"] = runtime_ms / 1000

    day.at("07:00")
    # vLLM still runs on a whole GPU; it started before GPU 2 became whole (the node's
    # gpu-layout-since annotation), so it cannot be on GPU 2 and the switch back goes ahead.
    run = run_playbook(EXAMPLE, at="07:00")
    RESULTS["window_switch_playbook_s"]["07:00"] = run["seconds"]
    assert "Sharing window in force at 07:00 UTC: none (the base state)" in run["stdout"]
    assert pod_running(twin, "prod-serving", "vllm-chat")
    live = twin.get(f"/api/v1/nodes/{node}")["status"]["allocatable"]
    assert live[GPU] == "2" and live[SHARED] == "5", live
    morning = [f"notebook-{i}-morning" for i in range(5)]
    for name in morning:
        day.submit(name, "data-science", "data-science", {SHARED: 1})
    for name in morning:
        day.wait_admitted(name)
    until = time.monotonic()
    RESULTS["time_to_admission_s"] = {n: r["time_to_admission_s"] for n, r in day.jobs.items() if r["admitted"]}
    RESULTS["gpu_use"] = day.gpu_use(until)
    RESULTS["events"] = day.log
    write_results("example-day", RESULTS)


def test_production_reclaims(twin_session, day):
    """Training borrows production's idle whole GPU; production submits and Kueue preempts."""
    twin = twin_session
    day.end("vllm-chat")
    twin.wait_for("vLLM workload gone", lambda: not workload_of(twin, "prod-serving", "vllm-chat"),
                  timeout=TIMEOUT)
    day.submit("fine-tune-2", "training", "training", {GPU: 2})
    delays = []
    for attempt in range(3):
        wl = day.wait_admitted("fine-tune-2")
        twin.wait_for("training borrows production's GPU", lambda: (cluster_queue_usage(
            twin, "training", GPU) or {}).get("borrowed") == "1", timeout=TIMEOUT)
        twin.wait_for("fine-tune-2 pod running", lambda: pod_running(twin, "training", "fine-tune-2"),
                      timeout=TIMEOUT)
        name = f"vllm-reclaim-{attempt}"
        day.submit(name, "prod-serving", "production", {GPU: 1})
        day.wait_admitted(name)
        delays.append(day.jobs[name]["time_to_admission_s"])
        wl = workload_of(twin, "training", "fine-tune-2")
        preempted = condition(wl, "Preempted")
        assert preempted and preempted["status"] == "True", wl["status"]
        assert preempted["reason"] == "InCohortReclamation", preempted
        twin.wait_for(f"{name} pod running", lambda n=name: pod_running(twin, "prod-serving", n),
                      timeout=TIMEOUT)
        day.end(name)
        twin.wait_for(f"{name} workload gone", lambda n=name: not workload_of(twin, "prod-serving", n),
                      timeout=TIMEOUT)
    RESULTS["reclaim_delay_s"] = delays
    write_results("example-day", RESULTS)
    assert max(delays) < 30, delays


def test_foreign_queue_name_refused(twin_session):
    """A GPU Job in training that names production's LocalQueue (which only exists in
    prod-serving) is refused at admission (policy gpushare-gpu-through-kueue); before the
    policy Kueue left it suspended, never admitted."""
    twin = twin_session
    with pytest.raises(ApiError) as err:
        twin.create("/apis/batch/v1/namespaces/training/jobs", job("sneaky", "training", "production", {GPU: 1}))
    assert err.value.status == 403, err.value
    assert "come only through Kueue" in err.value.body["message"], err.value.body
    RESULTS["foreign_queue"] = err.value.body["message"]
    write_results("example-day", RESULTS)
