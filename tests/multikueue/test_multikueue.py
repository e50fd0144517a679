"""MultiKueue on three cluster twins: a manager and two workers, each a real kube-apiserver
with the real Kueue v0.19.2 and KWOK GPU nodes (tests/multikueue/three-twins.sh starts them).

playbooks/multikueue.yml (the multikueue and kueue roles, kubernetes.core) wires them from an
inventory of clusters; batch/v1 Jobs submitted to the team's LocalQueue on the manager run
on a worker with room and their status comes back; a worker's apiserver killed mid-run has
its job re-dispatched after workerLostTimeout; the lost worker comes back fresh; a worker
removed from the inventory leaves the MultiKueueConfig; a rerun changes nothing.

Which worker runs a job is what the twins report (the Jobs, pods and Workloads each holds),
never what the planner says; every pod that ran is recorded by a watcher, so a job that ran
twice would show.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "twin"))

import gpu_nodes  # noqa: E402
from twinclient import ApiError, Twin, is_true, read_env  # noqa: E402

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
NS = "training"
GPU = "nvidia.com/gpu"
STATES = {"manager": os.environ.get("GPUSHARE_MK_MANAGER", ""), "site-a": os.environ.get("GPUSHARE_MK_SITE_A", ""),
          "site-b": os.environ.get("GPUSHARE_MK_SITE_B", "")}
WORKERS = ("site-a", "site-b")
LOST_TIMEOUT = os.environ.get("GPUSHARE_MK_LOST_TIMEOUT", "20s")
TWIN_BIN = Path(os.environ.get("GPUSHARE_TWIN_CACHE", Path.home() / ".cache" / "gpushare-twin")) / "bin"
RESULTS: dict = {}
RUNS: list = []
# Each worker: one server with two H200s, both owned by training (site-b's group gets the same
# team list from group_vars/all): the manager's training queue has 2 + 2 = 4 GPUs.
HOST_VARS = {"gpu_model": "h200", "gpu_count": 2, "cpus": 64, "memory_gib": 512,
             "gpus": [{"index": 0, "mode": "whole", "team": "training"}, {"index": 1, "mode": "whole", "team": "training"}]}
TEAMS = [{"name": "training", "namespaces": [NS], "priority": 100, "lend": True, "borrow": True}]
# The team namespaces are Pod Security "restricted" on every cluster (the inventory sets no
# pod_security); what that level asks (kubernetes.io/docs/concepts/security/pod-security-standards):
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def twin(name: str) -> Twin:
    return Twin(read_env(Path(STATES[name]) / "twin.env"))


def kubeconfig(name: str) -> str:
    return str(Path(STATES[name]) / "admin.kubeconfig")


def write_inventory(base: Path, workers=WORKERS, manager_kubeconfig: str | None = None,
                    worker_kubeconfigs: dict | None = None, group_teams: dict | None = None) -> Path:
    """An inventory of clusters: the manager, each worker a group with one GPU server.
    ``workers``: the MultiKueue workers, in order (a name twice lists that cluster twice);
    ``group_teams``: worker name -> its group's own gpushare_teams."""
    (base / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    for worker, teams in (group_teams or {}).items():
        (base / "group_vars" / worker.replace("-", "_")).mkdir(parents=True, exist_ok=True)
        (base / "group_vars" / worker.replace("-", "_") / "teams.yml").write_text(yaml.safe_dump({"gpushare_teams": teams}))
    (base / "host_vars").mkdir(exist_ok=True)
    hosts = {"all": {"children": {w.replace("-", "_"): {"hosts": {"%s-gpu01" % w: {}}} for w in WORKERS}}}
    (base / "hosts.yml").write_text(yaml.safe_dump(hosts))
    for w in WORKERS:
        (base / "host_vars" / ("%s-gpu01.yml" % w)).write_text(yaml.safe_dump({"gpushare_node": HOST_VARS}))
    (base / "group_vars" / "all" / "teams.yml").write_text(yaml.safe_dump({"gpushare_teams": TEAMS}))
    spec = {"manager": {"name": "hq", "kubeconfig": manager_kubeconfig or kubeconfig("manager")},
            "workers": [{"name": w, "group": w.replace("-", "_"),
                         "kubeconfig": (worker_kubeconfigs or {}).get(w) or kubeconfig(w)} for w in workers],
            "worker_lost_timeout": LOST_TIMEOUT}
    (base / "group_vars" / "all" / "multikueue.yml").write_text(yaml.safe_dump({"gpushare_multikueue": spec}))
    return base / "hosts.yml"


def run_roles(inventory: Path, check: bool = True) -> dict:
    """playbooks/multikueue.yml as a user runs it; Kueue itself is the twins' own process
    (kueue_install: false, as on a cluster where Kueue is installed another way)."""
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH="%s:%s:%s" % (bindir, TWIN_BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    extra = {"kueue_install": False, "kueue_wait_delay": 1, "kueue_wait_retries": 60, "multikueue_wait_delay": 1,
             "gpushare_artifacts_dir": str(inventory.parent / "artifacts")}
    cmd = [str(bindir / "ansible-playbook"), "-i", str(inventory), "playbooks/multikueue.yml", "-e", json.dumps(extra)]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    recap = re.search(r"^localhost\s+:\s+(.*)$", proc.stdout, re.M)
    RUNS.append(proc.stdout)
    out = Path(os.environ.get("GPUSHARE_TWIN_RESULTS", ROOT / "build" / "twin"))
    out.mkdir(parents=True, exist_ok=True)
    (out / ("multikueue-run-%d.log" % len(RUNS))).write_text(proc.stdout + proc.stderr)
    if check:
        assert proc.returncode == 0, "%s\n%s" % (proc.stdout[-8000:], proc.stderr[-3000:])
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", recap.group(1))} if recap else {}
    return {"rc": proc.returncode, "counts": counts, "stdout": proc.stdout, "seconds": round(time.monotonic() - start, 1)}


def changed_tasks(stdout: str) -> list[str]:
    """The tasks a run reports changed (TASK line, then its changed: line)."""
    out, task = [], ""
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            task = line
        elif line.startswith("changed:"):
            out.append("%s %s" % (task, line[:200]))
    return out


def create_gpu_nodes(name: str) -> None:
    """The worker's KWOK GPU server as the GPU Operator and the gpu_operator role leave it:
    two whole GPUs advertised, the GPU model label the ResourceFlavor selects."""
    client = twin(name)
    node = gpu_nodes.initial_node({"name": "%s-gpu01" % name, "gpu_count": 2, "cpus": 64, "memory_gib": 512,
                                   "product": "NVIDIA H200"})
    node["metadata"]["labels"]["gpushare.cluster/gpu-model"] = "h200-141gb"
    client.create("/api/v1/nodes", node)
    client.patch_status_merge(gpu_nodes.node_path(node["metadata"]["name"]), {"status": node["status"]})


def job(name: str, gpus: int, run_s: float) -> dict:
    """A batch/v1 Job for the team's LocalQueue; KWOK completes its pod run_s after it runs
    (the annotations reach the worker's copy) and starts it at once."""
    requests = {GPU: str(gpus)}
    delay = "%dms" % int(run_s * 1000)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "training"}},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                     "template": {"metadata": {"annotations": {
                         "pod-complete.stage.kwok.x-k8s.io/delay": delay,
                         "pod-complete.stage.kwok.x-k8s.io/jitter-delay": delay,
                         "pod-create.stage.kwok.x-k8s.io/delay": "0s",
                         "pod-create.stage.kwok.x-k8s.io/jitter-delay": "0s",
                         "pod-ready.stage.kwok.x-k8s.io/delay": "0s",
                         "pod-ready.stage.kwok.x-k8s.io/jitter-delay": "0s"}},
                         "spec": {"restartPolicy": "Never", "securityContext": RESTRICTED_POD, "containers": [{
                             "name": "main", "image": "registry.invalid/gpushare/train:1",
                             "securityContext": RESTRICTED_CONTAINER,
                             "resources": {"requests": requests, "limits": requests}}]}}}}


class PodWatch:
    """Every pod of a Job seen on a worker, with the phases it reached (polled)."""

    def __init__(self):
        self.seen: dict[tuple[str, str], dict] = {}   # (worker, pod uid) -> {job, phases, first seen}
        self.down: set[str] = set()
        self.clients: dict[str, Twin] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def _run(self):
        while not self._stop.is_set():
            for name in WORKERS:
                if name in self.down:
                    continue
                try:
                    client = self.clients.get(name) or self.clients.setdefault(name, twin(name))
                    pods = client.get("/api/v1/namespaces/%s/pods" % NS)["items"]
                except (ApiError, OSError, KeyError):
                    self.clients.pop(name, None)   # e.g. the worker came back with a new address
                    continue
                for pod in pods:
                    job_name = pod["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name")
                    if job_name:
                        rec = self.seen.setdefault((name, pod["metadata"]["uid"]),
                                                   {"job": job_name, "phases": set(), "first": time.monotonic()})
                        rec["phases"].add(pod.get("status", {}).get("phase"))
            self._stop.wait(0.3)

    def ran(self, job_name: str) -> list[tuple[str, set]]:
        return [(w, r["phases"]) for (w, _uid), r in self.seen.items() if r["job"] == job_name]

    def succeeded_on(self, job_name: str) -> list[str]:
        return [w for w, phases in self.ran(job_name) if "Succeeded" in phases]

    def first_seen(self, job_name: str, worker: str) -> float:
        return min(r["first"] for (w, _uid), r in self.seen.items() if w == worker and r["job"] == job_name)


def manager_job(name: str) -> dict:
    return twin("manager").get("/apis/batch/v1/namespaces/%s/jobs/%s" % (NS, name))


def manager_workloads(job_name: str) -> list[dict]:
    """The manager's Workloads of its Job ``job_name`` (Kueue's job controller owns them by the Job)."""
    items = twin("manager").get("%s/namespaces/%s/workloads" % (KUEUE, NS))["items"]
    return [w for w in items if any(o["kind"] == "Job" and o["name"] == job_name for o in w["metadata"].get("ownerReferences") or [])]


def reported_once(job_name: str) -> dict:
    """The manager's Job, after checking it reports one success and has one finished Workload."""
    done = manager_job(job_name)
    assert done["status"].get("succeeded") == 1 and not done["status"].get("failed"), done["status"]
    assert done["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    (workload,) = manager_workloads(job_name)
    assert is_true(workload, "Finished"), workload["status"]
    return done


def seconds(duration: str) -> float:
    """A Go duration of whole seconds or minutes, as the test sets workerLostTimeout."""
    return float(duration[:-1]) * {"s": 1, "m": 60}[duration[-1]]


def complete(obj: dict) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True" for c in obj.get("status", {}).get("conditions") or [])


def running_on(name: str, watch: PodWatch) -> str | None:
    """The worker whose pod of the Job is Running now (as last polled)."""
    running = [w for w, phases in watch.ran(name) if "Running" in phases and "Succeeded" not in phases]
    return running[-1] if running else None


def wait(what, fn, timeout=120, interval=0.3):
    return twin("manager").wait_for(what, fn, timeout=timeout, interval=interval)


# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inventory(tmp_path_factory) -> Path:
    return write_inventory(tmp_path_factory.mktemp("clusters"))


@pytest.fixture(scope="module")
def watch():
    w = PodWatch().start()
    yield w
    w.stop()


def test_bad_input_stops_before_anything_is_applied(tmp_path):
    """A cluster listed twice, a manager that is also a worker, a worker without the team's
    namespace (checked in the plan) and an unreachable worker (nothing listens on its
    address; checked before the first apply): each run fails naming the inventory path, and
    no cluster gets anything."""
    for name in WORKERS:
        create_gpu_nodes(name)
    dead = yaml.safe_load(Path(kubeconfig("site-b")).read_text())
    dead["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"   # discard port: nothing listens
    dead_path = tmp_path / "dead.kubeconfig"
    dead_path.write_text(yaml.safe_dump(dead))
    dead_path.chmod(0o600)
    cases = {
        "twice": ({"workers": ("site-a", "site-b", "site-a")},
                  "gpushare_multikueue.workers[2].name: cluster site-a is listed twice (also gpushare_multikueue.workers[0])"),
        "same": ({"manager_kubeconfig": kubeconfig("site-b")},
                 "gpushare_multikueue.manager.kubeconfig: the manager is also a worker (gpushare_multikueue.workers[1])"),
        "no-namespace": ({"group_teams": {"site-b": [dict(TEAMS[0], namespaces=["training-b"])]}},
                         "gpushare_multikueue.workers[1] (group site_b): team training has no namespace training on this "
                         "worker (got ['training-b'])"),
        "dead": ({"worker_kubeconfigs": {"site-b": str(dead_path)}},
                 "gpushare_multikueue.workers[1].kubeconfig: cluster site-b does not answer (got '%s'" % dead_path),
    }
    for case, (args, message) in cases.items():
        run = run_roles(write_inventory(tmp_path / case, **args), check=False)
        assert run["rc"] != 0, case
        assert message in run["stdout"], (case, run["stdout"][-3000:])
    for name in STATES:
        for path in ("/api/v1/namespaces/%s" % NS, "%s/clusterqueues/training" % KUEUE,
                     "/api/v1/namespaces/kueue-system/serviceaccounts/gpushare-multikueue"):
            with pytest.raises(ApiError) as err:
                twin(name).get(path)
            assert err.value.status == 404, (name, path)


def test_roles_wire_the_clusters_and_a_rerun_changes_nothing(inventory, tmp_path):
    """Both workers, then the same again (nothing changes), then only site-a (site-b removed
    from the MultiKueueConfig), then both (site-b added back)."""
    manager = twin("manager")
    both = run_roles(inventory)
    for name in WORKERS:
        cluster = manager.get("%s/multikueueclusters/%s" % (KUEUE, name))
        assert is_true(cluster, "Active"), cluster
    queue = manager.get("%s/clusterqueues/training" % KUEUE)
    (gpus,) = [r for g in queue["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"] if r["name"] == GPU]
    assert int(gpus["nominalQuota"]) == 4     # 2 + 2: what each worker's inventory gives training
    again = run_roles(inventory)
    assert again["counts"]["changed"] == 0, changed_tasks(again["stdout"])
    only_a = run_roles(write_inventory(tmp_path / "only-a", workers=("site-a",)))
    assert manager.get("%s/multikueueconfigs/gpushare-multikueue" % KUEUE)["spec"]["clusters"] == ["site-a"]
    for path in ("%s/multikueueclusters/site-b" % KUEUE, "/api/v1/namespaces/kueue-system/secrets/gpushare-multikueue-site-b"):
        with pytest.raises(ApiError) as err:
            manager.get(path)
        assert err.value.status == 404, path
    added = run_roles(inventory)
    assert manager.get("%s/multikueueconfigs/gpushare-multikueue" % KUEUE)["spec"]["clusters"] == ["site-a", "site-b"]
    assert is_true(manager.get("%s/multikueueclusters/site-b" % KUEUE), "Active")
    RESULTS["roles_seconds"] = {"both": both["seconds"], "rerun": again["seconds"], "only_site_a": only_a["seconds"],
                                "added": added["seconds"]}


def test_jobs_run_on_the_worker_with_room_once_and_report_back(inventory, watch):
    """Two 2-GPU jobs: the first on whichever worker wins (Kueue dispatches to all at once),
    the second on the other one, the first being full."""
    manager = twin("manager")
    start = time.monotonic()
    manager.create("/apis/batch/v1/namespaces/%s/jobs" % NS, job("first", 2, 10))
    first_worker = wait("the first job running on a worker", lambda: running_on("first", watch))
    RESULTS["submit_to_running_s"] = round(time.monotonic() - start, 1)
    manager.create("/apis/batch/v1/namespaces/%s/jobs" % NS, job("second", 2, 10))
    second_worker = wait("the second job running on a worker", lambda: running_on("second", watch))
    assert second_worker != first_worker
    for name in ("first", "second"):
        wait("%s complete on the manager" % name, lambda n=name: complete(manager_job(n)))
        # Status mirrored from the worker's copy: one pod, succeeded once, one finished Workload.
        reported_once(name)
    time.sleep(1)      # a few more polls of the watcher: a second pod would show
    assert [len(watch.ran("first")), len(watch.ran("second"))] == [1, 1], watch.seen
    assert watch.succeeded_on("first") == [first_worker] and watch.succeeded_on("second") == [second_worker]
    RESULTS["end_to_end_s"] = round(time.monotonic() - start, 1)


def test_a_lost_worker_s_job_is_dispatched_again_and_completes_once(inventory, watch):
    manager = twin("manager")
    manager.create("/apis/batch/v1/namespaces/%s/jobs" % NS, job("lost", 2, 10))
    lost = wait("the job running on a worker", lambda: running_on("lost", watch))
    other = next(w for w in WORKERS if w != lost)
    pid = int((Path(STATES[lost]) / "pids" / "kube-apiserver.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    watch.down.add(lost)
    killed = time.monotonic()
    wait("the job complete on the manager after re-dispatch", lambda: complete(manager_job("lost")), timeout=180)
    RESULTS["lost_worker_to_complete_s"] = round(time.monotonic() - killed, 1)
    reported_once("lost")
    time.sleep(1)
    assert watch.succeeded_on("lost") == [other], watch.ran("lost")
    # Dispatched again only once workerLostTimeout had passed, not at the first lost heartbeat.
    redispatch = watch.first_seen("lost", other) - killed
    RESULTS["lost_worker_to_redispatch_s"] = round(redispatch, 1)
    assert redispatch >= seconds(LOST_TIMEOUT), redispatch
    RESULTS["lost_worker"] = lost


def test_the_lost_worker_comes_back_fresh_and_the_next_run_changes_nothing(inventory):
    """Kueue v0.19.2 may keep a returning lost worker's stale copy of a job it dispatched again
    (docs/multikueue.md), so the lost worker comes back as a new cluster (new etcd, new
    certificates, new address); the roles rewire it, and then a run changes nothing."""
    lost = RESULTS["lost_worker"]
    env = dict(os.environ, GPUSHARE_TWIN_STATE=STATES[lost], TWIN_PYTHON=sys.executable)
    subprocess.run([str(ROOT / "tests/twin/down.sh"), "--purge"], env=env, check=True)
    subprocess.run([str(ROOT / "tests/twin/up.sh")], env=env, check=True, capture_output=True, timeout=300)
    create_gpu_nodes(lost)
    rejoin = run_roles(inventory)
    assert rejoin["counts"]["changed"] > 0
    cluster = twin("manager").get("%s/multikueueclusters/%s" % (KUEUE, lost))
    assert is_true(cluster, "Active"), cluster
    again = run_roles(inventory)
    assert again["counts"]["changed"] == 0, changed_tasks(again["stdout"])
    reported_once("lost")    # the fresh worker brought back no stale copy of it
    RESULTS["rejoin_seconds"] = rejoin["seconds"]
    out = Path(os.environ.get("GPUSHARE_TWIN_RESULTS", ROOT / "build" / "twin"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "multikueue.json").write_text(json.dumps(RESULTS, indent=2) + "\n")
    print(json.dumps(RESULTS, indent=2))
