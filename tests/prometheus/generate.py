# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seeded history shaped like dcgm-exporter, kube-state-metrics and Kueue, for one example inventory.

    python tests/prometheus/generate.py --seed 1 --days 14 --step 300 \\
        --inventory inventory-examples/four-gpu-server --out build/prom/four.om

writes OpenMetrics text for ``promtool tsdb create-blocks-from openmetrics`` and, next to it,
``FILE.om.json``: the inventory, the window and the *truth* (per workload the pattern it was
generated from), which tests compare with what the advisor recovers. As a module:
``generate(name, seed, days, step) -> str`` and ``truth(name, seed, days, step) -> dict``.

What each workload runs comes from the inventory's Plan (plan.build_plan): MIG services on
their planned slices, time-sliced replicas on the time-sliced GPUs, whole-GPU workloads on
their team's whole GPUs (then unowned ones), DRA workloads on the DRA nodes, and the sharing
windows' layouts while a window is in force. Activity and memory are drawn from the real
H200 traces in tests/fixtures/usage-traces/h200 (one phase per workload shape); time-slicing
costs what contention.json measured (several busy sharers lose ~7 %).

What the real exporter does and the generator copies (dcgm-exporter 4.5-4.8, the version GPU
Operator v26.3.3 pins; internal/pkg/transformation/kubernetes.go, issues 105, 216, 307, 380,
512, 587):
* MIG instances have no DCGM_FI_DEV_GPU_UTIL; DCGM_FI_PROF_GR_ENGINE_ACTIVE is relative to
  the instance; FB_USED/FB_FREE are missing on some instances (``memory_missing`` in truth);
* labels gpu, UUID, pci_bus_id, device, modelName, DCGM_FI_DRIVER_VERSION, GPU_I_PROFILE and
  GPU_I_ID (MIG only), and ``Hostname`` (releases) or ``hostname`` (newer builds) per node;
* the pod's namespace/pod/container, which the ServiceMonitor's honorLabels false (the chart
  default) turns into exported_namespace/exported_pod/exported_container next to the
  exporter's own target labels; ``--honor-labels`` keeps them as namespace/pod/container;
* a time-sliced GPU's series go to one sharer ("once") or are copied to every sharer
  ("duplicated"), chosen per GPU (``timeslice_reporting`` in truth);
* GPUs allocated through DRA carry no pod labels (no attribution without
  KUBERNETES_ENABLE_DRA and ResourceSlice access);
* DCGM_FI_DEV_XID_ERRORS is a gauge of the last XID seen (one GPU gets an XID 13 and keeps it).

Pods (``--shape controller``, the default): Deployments ``<workload>-<rs hash>-<suffix>`` (owner
ReplicaSet ``<workload>-<rs hash>``), notebooks StatefulSet pods ``<workload>-<i>`` (owner
StatefulSet ``<workload>``), Jobs ``<workload>-<run>-<suffix>`` (owner Job ``<workload>-<run>``);
kube_pod_owner says which.

``--shape real``, as real clusters have them (what the advisor's workload identity is for):
* Deployments with a 10-character (now and then 9) pod-template hash and a 5-character suffix;
* the notebooks as JupyterHub single-user servers ``jupyter-<user>`` (no controller:
  owner_kind ``<none>``), started at login on working days and culled in the evening, plus one
  Kubeflow Notebook (StatefulSet ``<user>-gpu``, pod ``<user>-gpu-0``) on the same time-sliced
  GPU: one device shared by pods of different owners;
* the fine-tune's nights as a CronJob's Job ``<cronjob>-<scheduled minute>``, a Kubeflow TrainJob
  (JobSet Job ``<trainjob>-node-0``, pod ``<job>-0-<5>``) or a PyTorchJob (pod
  ``<name>-master-0``, owner PyTorchJob), the last 3 completed pods still listed (Succeeded);
* kube_pod_status_phase (Running, Succeeded) and kube_pod_labels with the labels a
  kube-state-metrics allowlist ``pods=[kueue.x-k8s.io/queue-name,component,
  hub.jupyter.org/username,notebook-name]`` exports; JupyterHub's hub and proxy pods (no GPU);
* the first node's exporter gone for two days (no dcgm-exporter series; kube-state-metrics still
  lists its pods);
* people working by ``--people-timezone`` (e.g. Europe/Berlin, whose DST change falls in a window
  ending 2026-11-09), while sharing windows stay in the inventory's timezone.
``--metrics advisor`` writes only the series the usage advisor reads (ADVISOR_METRICS).
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import hashlib
import json
import math
import random
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "usage-traces" / "h200"
for _path in (ROOT / ".collections", ROOT / "tests" / "unit"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# pylint: disable=wrong-import-position
import inventories  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan as plan_module  # noqa: E402

DRIVER = "580.159.04"
CONTEXT_MIB = 480           # CUDA context + allocator of a process that holds the GPU
IDLE_MIB = 0                # an idle GPU (no process) reports 0 MiB used
VLLM_UTILISATION = 0.9      # vLLM's default gpu_memory_utilization: its reservation
KUEUE_BUCKETS = (1, 2.5, 6.25, 15.625, 39.0625, 97.65625, 244.140625, 610.3515625, 1525.87890625,
                 3814.697265625, 9536.7431640625, 23841.857910156, 59604.644775391)
EXPORTER_TARGET = {"job": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "container": "nvidia-dcgm-exporter",
                   "service": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics"}
KSM_TARGET = {"job": "kube-state-metrics", "instance": "10.96.0.40:8080"}
KUEUE_TARGET = {"job": "kueue-controller-manager-metrics-service", "instance": "10.96.0.41:8443"}
# Shapes of the history (--shape): "controller" (every pod owned by a controller named like its
# inventory entry) or "real" (as real clusters have them: JupyterHub and Kubeflow notebooks,
# CronJob, Kubeflow TrainJob and PyTorchJob runs, completed Job pods kept, kube_pod_labels and
# kube_pod_status_phase, a node whose exporter is gone two days, people on a clock with DST).
SHAPES = ("controller", "real")
# The metrics the usage advisor reads (--metrics advisor): a history five times smaller to backfill.
ADVISOR_METRICS = frozenset({"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                             "DCGM_FI_DEV_GPU_UTIL", "kube_pod_owner", "kube_pod_labels", "kube_pod_status_phase"})
NOTEBOOK_USERS = ("alice", "bob", "chen", "dana", "eve")   # the last one runs a Kubeflow Notebook (a StatefulSet)
NOTEBOOK_BUSY = 0.3             # real shape: share of a session's working-hour samples a user keeps the GPU busy
JOB_HISTORY = 3                 # completed Job pods a CronJob keeps (successfulJobsHistoryLimit)
OUTAGE_DAYS = 2                 # real shape: the first node reports nothing for this long ...
OUTAGE_START_DAY = 9.55         # ... from this many days into the window (13:12 UTC)
# Pod labels kube-state-metrics exports in the real shape (its metricLabelsAllowlist pods=[...]).
POD_LABELS_ALLOWED = ("kueue.x-k8s.io/queue-name", "component", "hub.jupyter.org/username", "notebook-name")
# Which trace phase a workload's activity is drawn from, by name, then by kind.
PHASE_BY_NAME = {"embeddings": "embeddings", "embedder": "embeddings", "classifier": "classifier",
                 "reranker": "classifier", "speech-to-text": "speech-to-text", "asr": "speech-to-text",
                 "ocr": "speech-to-text", "demo-model": "speech-to-text"}


# --- traces ---------------------------------------------------------------------------------

def load_traces() -> dict:
    """Per phase: activity samples (0-1), memory above the idle card (MiB), copy activity (0-1);
    plus the contention figures (throughput of k busy sharers / one alone)."""
    phases: dict = {}
    idle_mib = None
    with open(TRACES / "samples.jsonl", encoding="utf-8") as f:
        for line in f:
            s = json.loads(line)
            if s["phase"] == "idle":
                idle_mib = s["fb_used_mib"] if idle_mib is None else min(idle_mib, s["fb_used_mib"])
            p = phases.setdefault(s["phase"], {"util": [], "mem": [], "copy": []})
            p["util"].append(s["gpu_util"] / 100.0)
            p["mem"].append(s["fb_used_mib"])
            p["copy"].append(s["mem_copy_util"] / 100.0)
    for p in phases.values():
        p["mem"] = [max(0, m - (idle_mib or 0)) for m in p["mem"]]
        p["mem_max"] = max(p["mem"])
    contention = json.loads((TRACES / "contention.json").read_text())
    alone = contention["busy_1"]["total"]
    return {"phases": phases, "idle_mib": idle_mib,
            "sharing_efficiency": min(contention["busy_2"]["total"], contention["busy_5"]["total"]) / alone}


# --- small helpers ----------------------------------------------------------------------------

def _hash(*parts, n: int = 10, alphabet: str = "0123456789abcdef") -> str:
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def _rng(seed: int, *parts) -> random.Random:
    return random.Random(int(_hash(seed, *parts, n=12), 16))


def _labels(d: dict) -> str:
    return ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"')) for k, v in sorted(d.items()))


def _fmt(v: float) -> str:
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    return "%.6g" % v


def gi_id(start: int, size: int) -> int:
    """GPU instance ids as NVIDIA numbers them on the 8-unit grid (7g 0, 4g/3g 1-2, 2g 3-6, 1g 7-14)."""
    if size >= 8:
        return 0
    if size >= 4:
        return 1 + start // 4
    if size >= 2:
        return 3 + start // 2
    return 7 + start


def diurnal(local: datetime.datetime) -> float:
    """Serving load 0.15-1: working hours on weekdays, lower at weekends."""
    hour = local.hour + local.minute / 60.0
    peak = math.exp(-((hour - 14.0) / 4.0) ** 2)
    return (0.15 + 0.85 * peak) * (0.55 if local.weekday() >= 5 else 1.0)


def working_hours(local: datetime.datetime) -> bool:
    return local.weekday() < 5 and 9 <= local.hour < 18


def in_window(window: dict, local: datetime.datetime) -> bool:
    minutes = local.hour * 60 + local.minute
    start = int(window["from"][:2]) * 60 + int(window["from"][3:])
    until = int(window["until"][:2]) * 60 + int(window["until"][3:])
    return start <= minutes < until if start < until else (minutes >= start or minutes < until)


# --- devices and placement --------------------------------------------------------------------

def _devices(node: dict, honor_labels: bool, hostname_label: str) -> dict:
    """Every device (whole GPU or MIG instance) of NODE keyed (node, gpu, start or None)."""
    model = gpu_catalog.lookup(node["model"])
    full = max((p.compute_slices for p in model.mig_profiles), default=1) if model else 1
    out = {}
    for gpu in node["gpus"]:
        idx = gpu["index"]
        uuid = "GPU-%s-%s-%s-%s-%s" % tuple(_hash(node["name"], idx, part, n=n) for part, n in enumerate((8, 4, 4, 4, 12)))
        base = {"gpu": str(idx), "UUID": uuid,
                "pci_bus_id": "00000000:%02X:00.0" % (0x18 + 0x10 * idx), "device": "nvidia%d" % idx,
                "modelName": node["product"], "DCGM_FI_DRIVER_VERSION": DRIVER, hostname_label: node["name"]}
        if gpu["mig"]:
            for s in gpu["mig"]["slices"]:
                labels = dict(base, GPU_I_PROFILE=s["profile"], GPU_I_ID=str(gi_id(s["start"], s["size"])))
                g = int(s["profile"].split("g.", 1)[0])
                out[(node["name"], idx, s["start"])] = {
                    "labels": labels, "mig": True, "share": g / float(full), "memory_mib": s["memory_mib"],
                    "slice": s, "gpu": gpu, "node": node}
        else:
            out[(node["name"], idx, None)] = {"labels": base, "mig": False, "share": 1.0,
                                              "memory_mib": model.memory_mib if model else 81920, "slice": None,
                                              "gpu": gpu, "node": node}
    del honor_labels
    return out


def _whole_gpus(nodes: list, team: str, dra: bool) -> list:
    """Whole GPUs a workload of TEAM may take: its own first, then unowned ones, then other
    teams' (Kueue lends what their owners leave idle; serving is placed first)."""
    own, pool, lent = [], [], []
    for node in nodes:
        if bool(node["dra"]) != dra:
            continue
        for gpu in node["gpus"]:
            if gpu["mig"] or gpu["mode"] != "whole":
                continue
            key = (node["name"], gpu["index"], None)
            (own if gpu["team"] == team else pool if gpu["team"] is None else lent).append(key)
    return own + pool + lent


def _timeslice_devices(nodes: list, team: str) -> list:
    own, other = [], []
    for node in nodes:
        for gpu in node["gpus"]:
            if gpu["mode"] != "timeslice":
                continue
            key = (node["name"], gpu["index"], 0 if gpu["mig"] else None)
            (own if gpu["team"] == team else other).append(key)
    return own or other


def place(plan_state: dict, workloads: list) -> dict:
    """Workload name -> per replica the list of device keys it runs on in PLAN_STATE (a Plan or
    one of its windows' node sets). Whole GPUs are handed out once; what does not fit is left
    unplaced (the replica waits)."""
    nodes = plan_state["nodes"]
    taken: set = set()
    out: dict = {}
    order = sorted(workloads, key=lambda w: (w["kind"] not in ("serving",), w["name"]))
    for w in order:
        replicas = []
        if w["sharing"] == "mig":      # the slices this state's layout gives the workload
            mine = sorted((s["replica"], node["name"], gpu["index"], s["start"]) for node in nodes for gpu in node["gpus"]
                          for s in (gpu["mig"] or {}).get("slices", []) if s.get("workload") == w["name"])
            replicas = [[(n, g, start)] for _r, n, g, start in mine]
        elif w["sharing"] == "timeslice":
            devs = _timeslice_devices(nodes, w["team"])
            replicas = [[devs[i % len(devs)]] for i in range(w["replicas"])] if devs else []
        else:
            free = [d for d in _whole_gpus(nodes, w["team"], w["sharing"] == "dra") if d not in taken]
            for _replica in range(w["replicas"]):
                if len(free) < w["gpus_per_replica"]:
                    break
                mine, free = free[:w["gpus_per_replica"]], free[w["gpus_per_replica"]:]
                taken.update(mine)
                replicas.append(mine)
        out[w["name"]] = replicas
    return out


# --- patterns ------------------------------------------------------------------------------

def pattern_of(w: dict, plan: dict, traces: dict) -> dict:
    """The pattern a workload's history is drawn from (what tests expect the advisor to see)."""
    model_mib = {n["name"]: (gpu_catalog.lookup(n["model"]).memory_mib) for n in plan["nodes"]}
    card_mib = min(model_mib.values()) if model_mib else 81920
    declared = int(w["memory_gib"] * 1024) // max(1, w["gpus_per_replica"])
    phases = traces["phases"]
    if w["kind"] == "serving" and w["sharing"] in ("whole", "dra") and (w["memory_gib"] == 0 or declared >= 0.4 * card_mib):
        return {"pattern": "serving-llm", "phase": "serving-llm", "active": "always", "reservation": VLLM_UTILISATION,
                "memory_mib": None}
    if w["kind"] == "serving":
        phase = PHASE_BY_NAME.get(w["name"], "embeddings")
        need = declared or int(phases[phase]["mem_max"] + CONTEXT_MIB)
        return {"pattern": "serving", "phase": phase, "active": "always", "reservation": None, "memory_mib": need}
    if w["kind"] == "notebook":
        need = declared or int(phases["notebook"]["mem_max"])
        return {"pattern": "notebook", "phase": "notebook", "active": "working-hours", "reservation": None, "memory_mib": need}
    has_window = bool(plan.get("windows"))
    need = declared or int(0.7 * card_mib)
    if w["kind"] == "training" and has_window:
        win = plan["windows"][0]
        return {"pattern": "training", "phase": "fine-tune", "active": "night", "window": [win["from"], win["until"]],
                "reservation": None, "memory_mib": need}
    return {"pattern": "training" if w["kind"] == "training" else "batch", "phase": "fine-tune", "active": "runs",
            "reservation": None, "memory_mib": need}


def _runs(rng: random.Random, start: float, end: float, kind: str) -> list:
    """Run intervals [(t0, t1)] of a batch job or a training without a window."""
    out, t = [], start + rng.uniform(0, 3 * 3600)
    while t < end:
        length = rng.uniform(10, 30) * 3600 if kind == "training" else rng.uniform(1, 4) * 3600
        out.append((t, min(end, t + length)))
        t += length + (rng.uniform(6, 20) * 3600 if kind == "training" else rng.uniform(2, 10) * 3600)
    return out


class Replica:
    """One pod of a workload: when it runs and what it draws."""

    def __init__(self, w: dict, index: int, pat: dict, seed: int, start: float, end: float, tz: ZoneInfo,
                 shape: str = "controller", people: ZoneInfo | None = None):
        self.workload, self.index, self.pattern = w, index, pat
        self.seed = seed
        self.rng = _rng(seed, w["name"], index)
        self.tz = tz
        self.shape = shape
        self.people = people or tz
        self.runs = None
        self.sessions = None
        if shape == "real" and pat["pattern"] == "notebook":
            self.sessions = _sessions(_rng(seed, w["name"], index, "sessions"), start, end, self.people)
        if pat["active"] == "runs":
            self.runs = _runs(self.rng, start, end, pat["pattern"])
        # Deployments roll out now and then (a new ReplicaSet, new pods, new admissions).
        self.rollouts = []
        day = start - start % 86400
        while day < end:
            roll = _rng(seed, w["name"], "rollout", day)
            if roll.random() < 0.4:
                self.rollouts.append(day + 10 * 3600 + roll.uniform(0, 6 * 3600))
            day += 86400

    def pod(self, t: float) -> tuple[str, str, str]:
        """(pod name, owner kind, owner name) at T."""
        w, alphabet = self.workload, "bcdfghjklmnpqrstvwxz2456789"
        if self.shape == "real":
            return self._real_pod(t)
        if self.pattern["pattern"] == "notebook":
            return "%s-%d" % (w["name"], self.index), "StatefulSet", w["name"]
        if self.pattern["pattern"] in ("serving", "serving-llm"):
            rollout = bisect.bisect_right(self.rollouts, t)
            owner = "%s-%s" % (w["name"], _hash(self.seed, w["name"], "rs", rollout, n=10, alphabet=alphabet))
            return "%s-%s" % (owner, _hash(owner, self.index, n=5, alphabet=alphabet)), "ReplicaSet", owner
        run = self.run_start(t)
        job = "%s-%s" % (w["name"], _hash(w["name"], self.index, run, n=8, alphabet="0123456789abcdef"))
        return "%s-%s" % (job, _hash(job, n=5, alphabet=alphabet)), "Job", job

    def labels(self) -> dict:
        """The pod's labels kube-state-metrics exports (real shape)."""
        if self.shape != "real":
            return {}
        if self.pattern["pattern"] == "notebook":
            user = NOTEBOOK_USERS[self.index % len(NOTEBOOK_USERS)]
            if self.index < len(NOTEBOOK_USERS) - 1:
                return {"component": "singleuser-server", "hub.jupyter.org/username": user}
            return {"notebook-name": "%s-gpu" % user}
        if self.pattern["pattern"] in ("training", "batch"):
            return {"kueue.x-k8s.io/queue-name": self.workload["team"]}
        return {}

    def _real_pod(self, t: float) -> tuple[str, str, str]:
        """Pods as real clusters name them: a Deployment's ReplicaSet hash of 9 or 10 characters
        and a 5-character suffix; JupyterHub's bare jupyter-<user> pods and a Kubeflow
        Notebook's StatefulSet pod; a night's fine-tune as a CronJob's Job
        (<cronjob>-<minutes>), a Kubeflow TrainJob (JobSet Job <trainjob>-node-0, pod
        <job>-0-<5>) or a PyTorchJob (<name>-master-0, no Job in between)."""
        w, alphabet = self.workload, "bcdfghjklmnpqrstvwxz2456789"
        if self.pattern["pattern"] == "notebook":
            user = NOTEBOOK_USERS[self.index % len(NOTEBOOK_USERS)]
            if self.index < len(NOTEBOOK_USERS) - 1:
                return "jupyter-%s" % user, "<none>", "<none>"
            return "%s-gpu-0" % user, "StatefulSet", "%s-gpu" % user
        if self.pattern["pattern"] in ("serving", "serving-llm"):
            rollout = bisect.bisect_right(self.rollouts, t)
            n = 9 if _rng(self.seed, w["name"], "hashlen", rollout).random() < 0.2 else 10
            owner = "%s-%s" % (w["name"], _hash(self.seed, w["name"], "rs", rollout, n=n, alphabet=alphabet))
            return "%s-%s" % (owner, _hash(owner, self.index, n=5, alphabet=alphabet)), "ReplicaSet", owner
        if self.pattern["active"] == "night":       # the night of the evening it began
            run = (datetime.datetime.fromtimestamp(t, self.tz) - datetime.timedelta(hours=12)).date().isoformat()
        else:
            run = self.run_start(t)
        variant = _rng(self.seed, w["name"], "variant", run).random()
        if self.pattern["active"] == "night":
            night = datetime.date.fromisoformat(run)
            h, m = (int(x) for x in self.pattern["window"][0].split(":"))
            scheduled = datetime.datetime(night.year, night.month, night.day, h, m, tzinfo=self.tz).timestamp()
        else:
            scheduled = run
        if variant < 0.6:           # the CronJob's run: Job <cronjob>-<scheduled minute since the epoch>
            job = "%s-%d" % (w["name"], int(scheduled) // 60)
            return "%s-%s" % (job, _hash(job, n=5, alphabet=alphabet)), "Job", job
        if variant < 0.8:           # a Kubeflow TrainJob (v2): JobSet -> Job <trainjob>-node-0 -> pod <job>-0-<5>
            job = "%s-%s-node-0" % (w["name"], _hash(w["name"], run, n=5, alphabet="abcdefghijklmnopqrstuvwxyz0123456789"))
            return "%s-0-%s" % (job, _hash(job, n=5, alphabet=alphabet)), "Job", job
        owner = "%s-rerun-%s" % (w["name"], _hash(w["name"], run, "pt", n=6, alphabet="0123456789abcdef"))
        return "%s-master-0" % owner, "PyTorchJob", owner

    def run_start(self, t: float):
        if self.runs is not None:
            i = bisect.bisect_right([r[0] for r in self.runs], t) - 1
            return self.runs[i][0] if i >= 0 else None
        local = datetime.datetime.fromtimestamp(t, self.tz)
        return local.date().isoformat()

    def running(self, t: float, local: datetime.datetime, window_on: bool) -> bool:
        active = self.pattern["active"]
        if active == "always":
            return True
        if self.sessions is not None:     # JupyterHub: up from login until culled, in people's working days
            i = bisect.bisect_right(self.sessions, (t, float("inf"))) - 1
            return i >= 0 and self.sessions[i][0] <= t < self.sessions[i][1] and not window_on
        if active == "working-hours":
            return not window_on          # notebook servers stay up; a window may take their GPU
        if active == "night":
            night = (local - datetime.timedelta(hours=12)).date()      # the night of the evening it began
            return window_on and _rng(self.seed, self.workload["name"], night).random() > 0.15
        return any(r0 <= t < r1 for r0, r1 in self.runs)

    def draw(self, traces: dict, local: datetime.datetime, rng: random.Random, device_mib: int) -> tuple[float, int]:
        """(activity in whole-GPU terms 0-1, memory MiB) of this pod at one sample."""
        pat, phase = self.pattern, traces["phases"][self.pattern["phase"]]
        u = phase["util"][rng.randrange(len(phase["util"]))]
        if pat["pattern"] == "serving-llm":
            load = diurnal(local)
            return min(1.0, u * (0.3 + 1.2 * load)), int(pat["reservation"] * device_mib) + rng.randrange(-40, 40)
        if pat["pattern"] == "serving":
            load = diurnal(local)
            mem = int(pat["memory_mib"] * (0.8 + 0.04 * load + rng.uniform(-0.01, 0.01)))
            if rng.random() < 0.01:                  # a long request batch: the peak
                mem = int(pat["memory_mib"] * rng.uniform(0.9, 0.97))
            return min(1.0, u * (0.5 + load)), min(mem, device_mib - CONTEXT_MIB)
        if pat["pattern"] == "notebook":
            busy = working_hours(local) and rng.random() < (NOTEBOOK_BUSY if self.sessions is not None else 0.6)
            held = int(pat["memory_mib"] * rng.uniform(0.55, 0.85)) if busy or rng.random() < 0.7 else CONTEXT_MIB
            if busy and rng.random() < 0.05:
                held = int(pat["memory_mib"] * rng.uniform(0.9, 0.98))
            return (u if busy else 0.0), min(held, device_mib - CONTEXT_MIB)
        mem = int(pat["memory_mib"] * rng.uniform(0.85, 0.95))
        return u, min(mem, device_mib - CONTEXT_MIB)


def _sessions(rng: random.Random, start: float, end: float, people: ZoneInfo) -> list:
    """A JupyterHub user's server: started at login on working days (09:00-10:30 on the people's
    clock), culled after an hour idle in the evening (17:30-19:00); now and then a short session
    on a weekend, now and then a day off."""
    out = []
    day = datetime.datetime.fromtimestamp(start, people).date()
    last = datetime.datetime.fromtimestamp(end, people).date()
    while day <= last:
        weekday = day.weekday() < 5
        if (weekday and rng.random() > 0.05) or (not weekday and rng.random() < 0.1):
            login = (9.0 + rng.uniform(0, 1.5)) if weekday else (11.0 + rng.uniform(0, 1))
            culled = (17.5 + rng.uniform(0, 1.5)) if weekday else (login + rng.uniform(2, 4))
            t0 = datetime.datetime(day.year, day.month, day.day, tzinfo=people) + datetime.timedelta(hours=login)
            t1 = datetime.datetime(day.year, day.month, day.day, tzinfo=people) + datetime.timedelta(hours=culled)
            out.append((t0.timestamp(), t1.timestamp()))
        day += datetime.timedelta(days=1)
    return out


def _offset_changes(start: float, end: float, tz: ZoneInfo) -> list:
    """UTC times (hourly resolution) at which TZ's offset from UTC changes within [start, end]."""
    out, prev = [], None
    for t in range(int(start) - int(start) % 3600, int(end) + 1, 3600):
        off = datetime.datetime.fromtimestamp(t, tz).utcoffset()
        if prev is not None and off != prev:
            out.append(t)
        prev = off
    return out


# --- the generator ---------------------------------------------------------------------------

class Series:
    """Samples per (metric, label set), written family by family."""

    def __init__(self, keep=None):
        self.data: dict = {}
        self.types: dict = {}
        self.keep = keep            # metric families written (None: all)

    def add(self, metric: str, labels: dict, t: int, value, mtype: str = "gauge", family: str | None = None):
        fam = family or metric
        if self.keep is not None and fam not in self.keep:
            return
        self.types.setdefault(fam, mtype)
        key = (fam, metric, _labels(labels))
        self.data.setdefault(key, []).append("%s %d" % (_fmt(value), t))

    def text(self) -> str:
        out = []
        by_family: dict = {}
        for (fam, metric, labels), samples in self.data.items():
            by_family.setdefault(fam, []).append((metric, labels, samples))
        for fam in sorted(by_family):
            out.append("# TYPE %s %s\n" % (fam, self.types[fam]))
            for metric, labels, samples in sorted(by_family[fam]):
                prefix = "%s{%s} " % (metric, labels)
                out.append("".join(prefix + s + "\n" for s in samples))
        out.append("# EOF\n")
        return "".join(out)


def _flavor_of(plan_state: dict, node: dict, resource: str) -> str:
    for o in plan_state["kueue"]["objects"]:
        if o["kind"] != "ClusterQueue":
            continue
        for group in o["spec"]["resourceGroups"]:
            for fl in group["flavors"]:
                if fl["name"].startswith(node["model"]) and any(r["name"] == resource for r in fl["resources"]):
                    return fl["name"]
    return node["model"]


def _resource_of(dev: dict, node: dict) -> str:
    gpu = dev["gpu"]
    if node["dra"]:
        return "gpushare.cluster/dra-gpu"
    if gpu["mode"] == "timeslice":
        return gpu["resource"]
    if dev["mig"]:
        return "nvidia.com/mig-" + dev["slice"]["profile"]
    return "nvidia.com/gpu"


def build(inventory: str, seed: int = 1, days: float = 14, step: int = 300, end: float | None = None,
          honor_labels: bool = False, shape: str = "controller", people_timezone: str | None = None,
          metrics=None) -> tuple[str, dict]:
    """(OpenMetrics text, truth) for inventory-examples/INVENTORY (a name or a path ending in it).

    ``shape``: one of SHAPES; ``people_timezone``: the clock people work by (working hours,
    JupyterHub sessions, serving load; default the inventory's timezone, in which sharing
    windows are read); ``metrics``: the metric families to write (None: all; ADVISOR_METRICS)."""
    if shape not in SHAPES:
        raise ValueError("shape must be one of %s (got %r)" % (", ".join(SHAPES), shape))
    name = Path(inventory).name
    plan = plan_module.build_plan(inventories.load_example(name))
    traces = load_traces()
    tz = ZoneInfo(plan["cluster"].get("timezone") or "UTC")
    people = ZoneInfo(people_timezone) if people_timezone else tz
    if end is None:
        end = datetime.datetime.now(datetime.timezone.utc).timestamp()
    end = int(end) // step * step
    start = end - int(days * 86400) // step * step
    states = [{"name": None, "nodes": plan["nodes"], "kueue": plan["kueue"]}]
    states += [{"name": w["name"], "window": w, "nodes": w["nodes"], "kueue": w["kueue"]} for w in plan.get("windows", [])]
    for st in states:
        st["placement"] = place(st, plan["workloads"])
        st["devices"] = {}
        for i, node in enumerate(st["nodes"]):
            st["devices"].update(_devices(node, honor_labels, "hostname" if i % 2 else "Hostname"))
    # Pods live in the team's first namespace; batch and training in its last (prod-batch).
    namespaces = {t["name"]: t["namespaces"] for t in plan["teams"]}
    for w in plan["workloads"]:
        ns = namespaces[w["team"]]
        w["namespace"] = ns[0] if w["kind"] in ("serving", "notebook") else ns[-1]
    pats = {w["name"]: pattern_of(w, plan, traces) for w in plan["workloads"]}
    replicas = {w["name"]: [Replica(w, i, pats[w["name"]], seed, start, end, tz, shape, people)
                            for i in range(w["replicas"])] for w in plan["workloads"]}
    wl = {w["name"]: w for w in plan["workloads"]}
    team_cq = {t["name"]: t["cluster_queue"] for t in plan["teams"]}
    rng = _rng(seed, name, "samples")

    # Per time-sliced GPU: one sharer reported, or every sharer (issues 307, 587).
    ts_keys = sorted({k for st in states for k, d in st["devices"].items() if d["gpu"]["mode"] == "timeslice"})
    reporting = {k: ("duplicated" if i % 2 == 0 else "once") for i, k in enumerate(ts_keys)}
    # Memory missing (issues 380, 512) on MIG instances that hold no workload's only replica.
    only = {reps[0][0] for st in states for reps in st["placement"].values() if reps and reps[0][0][2] is not None}
    mig_keys = sorted({k for st in states for k, d in st["devices"].items() if d["mig"] and d["gpu"]["mode"] == "mig"})
    missing = {k for i, k in enumerate(mig_keys) if k not in only and i % 3 == 1}
    xid_rng = _rng(seed, name, "xid")
    whole_keys = sorted({k for st in states for k, d in st["devices"].items() if not d["mig"]}, key=str)
    xid_device = whole_keys[xid_rng.randrange(len(whole_keys))] if whole_keys else None
    xid_time = start + int(xid_rng.uniform(0.3, 0.7) * (end - start)) // step * step

    # Real shape: the first node reports nothing for OUTAGE_DAYS (its exporter, or the node, is gone;
    # kube-state-metrics still lists its pods as they were).
    outage = None
    if shape == "real":
        t0 = start + int(OUTAGE_START_DAY * 86400) // step * step
        outage = {"node": plan["nodes"][0]["name"], "from": t0, "until": t0 + OUTAGE_DAYS * 86400}
    finished: dict = {}         # workload -> completed Job pods still listed: [(pod, kind, owner, labels)]
    last_pod: dict = {}         # (workload, replica) -> (pod, kind, owner, labels) while it runs
    pods_seen: dict = {w: {} for w in wl}       # workload -> pod -> (owner kind, owner name)
    extra_pods = []
    if shape == "real":         # pods that hold no GPU, in the GPU namespaces (JupyterHub's hub and proxy)
        for w in plan["workloads"]:
            if w["kind"] == "notebook":
                for app in ("hub", "proxy"):
                    owner = "%s-%s" % (app, _hash(seed, app, n=10, alphabet="bcdfghjklmnpqrstvwxz2456789"))
                    extra_pods.append((w["namespace"], "%s-%s" % (owner, _hash(owner, n=5, alphabet="bcdfghjklmnpqrstvwxz2456789")),
                                       "ReplicaSet", owner, {"component": app}))
                break
    out = Series(metrics)
    stats: dict = {w: {"active": [], "mem": [], "steps": 0, "running": 0} for w in wl}
    admitted: dict = {}
    admissions: dict = {}
    hist: dict = {cq: [0] * (len(KUEUE_BUCKETS) + 1) for cq in team_cq.values()}
    hist_sum = dict.fromkeys(team_cq.values(), 0.0)
    pending_since: dict = {}

    def ksm_pod(ns: str, pod: str, okind: str, oname: str, labels: dict, phase: str, t: int) -> None:
        controller = "<none>" if okind == "<none>" else "true"
        out.add("kube_pod_owner", dict(KSM_TARGET, namespace=ns, pod=pod, uid=_hash(pod, n=32), owner_kind=okind,
                                       owner_name=oname, owner_is_controller=controller), t, 1)
        if shape == "real":
            out.add("kube_pod_status_phase", dict(KSM_TARGET, namespace=ns, pod=pod, uid=_hash(pod, n=32), phase=phase),
                    t, 1)
            exported = {"label_" + "".join(c if c.isalnum() or c == "_" else "_" for c in k): v
                        for k, v in labels.items() if k in POD_LABELS_ALLOWED}
            out.add("kube_pod_labels", dict(KSM_TARGET, namespace=ns, pod=pod, uid=_hash(pod, n=32), **exported), t, 1)

    for t in range(start, end + 1, step):
        local = datetime.datetime.fromtimestamp(t, tz)
        people_local = datetime.datetime.fromtimestamp(t, people)
        node_gone = outage is not None and outage["from"] <= t < outage["until"]
        st = states[0]
        for cand in states[1:]:
            if in_window(cand["window"], local):
                st = cand
        window_on = st["name"] is not None
        dev_pods: dict = {k: [] for k in st["devices"]}
        usage: dict = {}
        for wname, reps in replicas.items():
            w = wl[wname]
            placed = st["placement"].get(wname, [])
            for i, rep in enumerate(reps):
                stats[wname]["steps"] += 1
                if not rep.running(t, local, window_on) or i >= len(placed):
                    if rep.running(t, local, window_on) or (pats[wname]["active"] == "night" and not window_on
                                                            and local.hour >= 13):
                        pending_since.setdefault((wname, i), t)      # the example day: queued at 13:00
                    admitted.pop((wname, i), None)
                    done = last_pod.pop((wname, i), None)
                    if done is not None and shape == "real" and done[1] in ("Job", "PyTorchJob"):
                        finished.setdefault(wname, []).append(done)
                        del finished[wname][:-JOB_HISTORY]
                    continue
                pod, okind, oname = rep.pod(t)
                last_pod[(wname, i)] = (pod, okind, oname, rep.labels())
                pods_seen[wname][pod] = (okind, oname)
                if admitted.get((wname, i)) != pod:
                    admitted[(wname, i)] = pod
                    wait = t - pending_since.pop((wname, i), t) + rng.uniform(0.5, 8)
                    cq = team_cq[w["team"]]
                    admissions.setdefault(w["team"], []).append(t)
                    hist_sum[cq] += wait
                    for b, le in enumerate(KUEUE_BUCKETS):
                        if wait <= le:
                            hist[cq][b] += 1
                    hist[cq][-1] += 1
                stats[wname]["running"] += 1
                for key in placed[i]:
                    dev = st["devices"][key]
                    act, mem = rep.draw(traces, people_local, rng, dev["memory_mib"])
                    dev_pods[key].append({"w": w, "pod": pod, "act": act, "mem": mem})
                    stats[wname]["active"].append(act)
                    stats[wname]["mem"].append(mem)
                    node = dev["node"]
                    res = _resource_of(dev, node)
                    flav = _flavor_of(st, node, res)
                    usage[(w["team"], flav, res)] = usage.get((w["team"], flav, res), 0) + 1
                ksm_pod(w["namespace"], pod, okind, oname, rep.labels(), "Running", t)
        for wname, pods_done in finished.items():
            for pod, okind, oname, labels in pods_done:
                ksm_pod(wl[wname]["namespace"], pod, okind, oname, labels, "Succeeded", t)
        for ns, pod, okind, oname, labels in extra_pods:
            ksm_pod(ns, pod, okind, oname, labels, "Running", t)
        for key, dev in st["devices"].items():
            if node_gone and key[0] == outage["node"]:
                continue
            pods = dev_pods[key]
            busy = [p["act"] for p in pods if p["act"] > 0.05]
            efficiency = traces["sharing_efficiency"] if len(busy) > 1 else 1.0
            demand = min(1.0, sum(p["act"] for p in pods) * efficiency)
            used = (CONTEXT_MIB * len(pods) + sum(p["mem"] for p in pods)) if pods else IDLE_MIB
            used = min(used, dev["memory_mib"])
            rel = min(1.0, demand / dev["share"]) if dev["mig"] else demand
            node = dev["node"]
            target = dict(EXPORTER_TARGET, instance="10.0.%d.%d:9400" % (len(node["name"]) % 200, 10 + node["gpu_count"]),
                          pod="nvidia-dcgm-exporter-%s" % _hash(node["name"], n=5, alphabet="bcdfghjklmnpqrstvwxz2456789"))
            attributed = pods and not node["dra"]
            if not attributed:
                label_sets = [dict(target, **dev["labels"])]
            else:
                sharers = pods if (dev["gpu"]["mode"] != "timeslice" or reporting.get(key) == "duplicated") else pods[:1]
                label_sets = []
                for p in sharers:
                    pod_labels = {"namespace": p["w"]["namespace"], "pod": p["pod"], "container": p["w"]["name"]}
                    if honor_labels:
                        label_sets.append(dict(target, **dev["labels"], **pod_labels))
                    else:
                        label_sets.append(dict(target, **dev["labels"], **{"exported_" + k: v for k, v in pod_labels.items()}))
            copy_act = min(1.0, rel * rng.uniform(0.2, 0.5))
            for labels in label_sets:
                out.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, t, round(rel, 4))
                out.add("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", labels, t, round(rel * rng.uniform(0.3, 0.7), 4))
                out.add("DCGM_FI_PROF_DRAM_ACTIVE", labels, t, round(copy_act, 4))
                if not dev["mig"]:
                    out.add("DCGM_FI_DEV_GPU_UTIL", labels, t, int(round(demand * 100)))
                    xid = 13 if (key == xid_device and t >= xid_time) else 0
                    out.add("DCGM_FI_DEV_XID_ERRORS", labels, t, xid)
                if key not in missing:
                    out.add("DCGM_FI_DEV_FB_USED", labels, t, used)
                    out.add("DCGM_FI_DEV_FB_FREE", labels, t, dev["memory_mib"] - used)
        # Kueue: quota and usage per ClusterQueue/flavor/resource, pending workloads, admission waits.
        cohort = plan["cluster"]["cohort"]
        for o in st["kueue"]["objects"]:
            if o["kind"] != "ClusterQueue":
                continue
            cq = o["metadata"]["name"]
            team = next(tn for tn, c in team_cq.items() if c == cq)
            for group in o["spec"]["resourceGroups"]:
                for fl in group["flavors"]:
                    for r in fl["resources"]:
                        if not r["name"].startswith(("nvidia.com/", "gpushare.cluster/")):
                            continue            # CPU/memory quotas: not what these tests read
                        base = dict(KUEUE_TARGET, cohort=cohort, cluster_queue=cq, flavor=fl["name"], resource=r["name"])
                        out.add("kueue_cluster_queue_nominal_quota", base, t, r["nominalQuota"])
                        out.add("kueue_cluster_queue_resource_usage", base, t, usage.get((team, fl["name"], r["name"]), 0))
            waiting = sum(1 for (wn, _i) in pending_since if team_cq[wl[wn]["team"]] == cq)
            out.add("kueue_pending_workloads", dict(KUEUE_TARGET, cluster_queue=cq, status="active"), t, waiting)
            out.add("kueue_pending_workloads", dict(KUEUE_TARGET, cluster_queue=cq, status="inadmissible"), t, 0)
            fam = "kueue_admission_wait_time_seconds"
            for b, le in enumerate(KUEUE_BUCKETS + (None,)):
                out.add(fam + "_bucket", dict(KUEUE_TARGET, cluster_queue=cq, le="+Inf" if le is None else _fmt(le)),
                        t, hist[cq][b], "histogram", fam)
            out.add(fam + "_sum", dict(KUEUE_TARGET, cluster_queue=cq), t, round(hist_sum[cq], 3), "histogram", fam)
            out.add(fam + "_count", dict(KUEUE_TARGET, cluster_queue=cq), t, hist[cq][-1], "histogram", fam)
        for node in st["nodes"]:
            labels = dict(KSM_TARGET, node=node["name"],
                          label_gpushare_cluster_gpu_model=node["labels"].get("gpushare.cluster/gpu-model", ""))
            if node.get("mig_config"):
                labels.update(label_nvidia_com_mig_config=node["labels"].get("nvidia.com/mig.config", ""),
                              label_nvidia_com_mig_config_state="success")
            out.add("kube_node_labels", labels, t, 1)

    truth = _truth(name, plan, seed, days, step, start, end, honor_labels, pats, states, stats, reporting, missing,
                   xid_device, xid_time)
    truth.update(shape=shape, people_timezone=str(people), outage=outage,
                 people_offset_changes=_offset_changes(start, end, people),
                 metrics=sorted(metrics) if metrics is not None else "all")
    for wname, pods in pods_seen.items():
        truth["workloads"][wname]["pods"] = {p: list(o) for p, o in sorted(pods.items())}
        reps = replicas[wname]
        if reps and reps[0].sessions is not None:
            truth["workloads"][wname]["sessions"] = {rep.pod(start)[0]: len(rep.sessions) for rep in reps}
    truth["pods_without_gpu"] = [list(p[:4]) for p in extra_pods]
    for team, times in admissions.items():
        truth["teams"][team]["admissions"] = times
    return out.text(), truth


def _quantile(values: list, q: float):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _key(k) -> str:
    return "%s/%s" % (k[0], k[1]) + ("" if k[2] is None else "/%s" % k[2])


def _truth(name, plan, seed, days, step, start, end, honor_labels, pats, states, stats, reporting, missing,
           xid_device, xid_time) -> dict:
    workloads = {}
    for w in plan["workloads"]:
        s = stats[w["name"]]
        pat = pats[w["name"]]
        devices = []
        for st in states:
            for rep in st["placement"].get(w["name"], []):
                for k in rep:
                    d = st["devices"][k]
                    devices.append({"device": _key(k), "window": st["name"], "profile": d["slice"]["profile"] if d["slice"] else None,
                                    "node_dra": bool(d["node"]["dra"]), "memory_missing": k in missing})
        workloads[w["name"]] = {
            "team": w["team"], "namespace": w["namespace"], "kind": w["kind"], "sharing": w["sharing"],
            "replicas": w["replicas"], "gpus_per_replica": w["gpus_per_replica"],
            "pattern": pat["pattern"], "trace_phase": pat["phase"], "active": pat["active"], "window": pat.get("window"),
            "memory_reservation_fraction": pat["reservation"],
            "memory_need_mib": pat["memory_mib"],
            "memory_peak_mib": max(s["mem"]) if s["mem"] else None,
            "activity_p95_whole_gpu": _quantile(s["active"], 0.95),
            "activity_mean_whole_gpu": (sum(s["active"]) / len(s["active"])) if s["active"] else None,
            "running_share": s["running"] / float(s["steps"]) if s["steps"] else 0.0,
            "attribution": "none (DRA: counted per node)" if w["sharing"] == "dra" else "pod",
            "devices": devices,
        }
    return {"inventory": "inventory-examples/%s" % name, "seed": seed, "days": days, "step": step,
            "start": start, "end": end, "timezone": plan["cluster"].get("timezone") or "UTC",
            "honor_labels": honor_labels,
            "namespace_label": "namespace" if honor_labels else "exported_namespace",
            "teams": {t["name"]: {"namespaces": t["namespaces"], "cluster_queue": t["cluster_queue"], "admissions": []}
                      for t in plan["teams"]},
            "timeslice_reporting": {_key(k): v for k, v in reporting.items()},
            "memory_missing": sorted(_key(k) for k in missing),
            "xid": {"device": _key(xid_device), "since": xid_time, "value": 13} if xid_device else None,
            "workloads": workloads}


def generate(inventory_name: str, seed: int = 1, days: float = 14, step: int = 300, end: float | None = None,
             honor_labels: bool = False, **shape) -> str:
    return build(inventory_name, seed, days, step, end, honor_labels, **shape)[0]


def truth(inventory_name: str, seed: int = 1, days: float = 14, step: int = 300, end: float | None = None,
          honor_labels: bool = False, **shape) -> dict:
    return build(inventory_name, seed, days, step, end, honor_labels, **shape)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--inventory", required=True, help="inventory-examples/NAME (or NAME)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--days", type=float, default=14)
    ap.add_argument("--step", type=int, default=300, help="seconds between samples")
    ap.add_argument("--end", type=float, default=None, help="last sample, Unix seconds (default: now)")
    ap.add_argument("--honor-labels", action="store_true",
                    help="pod labels as namespace/pod/container (ServiceMonitor honorLabels true)")
    ap.add_argument("--shape", choices=SHAPES, default="controller",
                    help="controller: pods named after their inventory entry; real: JupyterHub, CronJob, Kubeflow, "
                         "completed pods, labels, phases, a node gone two days")
    ap.add_argument("--people-timezone", default=None,
                    help="IANA zone of the clock people work by (default: the inventory's timezone)")
    ap.add_argument("--metrics", choices=("all", "advisor"), default="all",
                    help="advisor: only the series the usage advisor reads (faster to backfill)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if not (ROOT / "inventory-examples" / Path(args.inventory).name).is_dir():
        ap.error("--inventory %s: no such example inventory; choose one of %s"
                 % (args.inventory, ", ".join(inventories.EXAMPLE_NAMES)))
    if args.step <= 0 or args.days <= 0:
        ap.error("--step and --days must be positive (got %s, %s)" % (args.step, args.days))
    text, facts = build(args.inventory, args.seed, args.days, args.step, args.end, args.honor_labels, shape=args.shape,
                        people_timezone=args.people_timezone,
                        metrics=ADVISOR_METRICS if args.metrics == "advisor" else None)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    Path(str(out) + ".json").write_text(json.dumps(facts, indent=1, sort_keys=True), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
