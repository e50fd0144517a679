# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seeded usage history for the advisor's unit tests and benchmark, built in-process as
``UsageData`` (what ``fetch_usage`` returns), shaped like dcgm-exporter series.

Shapes follow NVML traces read on a real H200 while the example day's workloads ran: an
LLM server holding a flat KV-cache reservation (about 94.8 GiB of 140) with load that rises
and falls over the day; small encoders mostly idle with bursts (1.4-2.2 GiB); notebooks
holding about 6-7.5 GiB each, busy in short bursts in working hours (28.8 % mean activity);
a fine-tune at 74-100 % with a flat 19 GiB per GPU. Like the real exporter: no
DCGM_FI_DEV_GPU_UTIL on MIG instances (activity is GR_ENGINE_ACTIVE relative to the
instance), FB_USED missing on one MIG instance, a time-sliced GPU reported to one pod only
(or copied to every sharer with ``duplicate_shared``).
"""

from __future__ import annotations

import numpy as np

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.identity import label_key
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage_advisor import GpuSeries, PodCounts, UsageData

DAY = 86400
# A Monday 00:00 UTC, so weekdays and hours are easy to reason about.
START = 1795910400 - 1795910400 % DAY
# Monday 2026-10-12 00:00 UTC: 28 days from it hold Europe's change from summer time (2026-10-25).
DST_START = 1791763200


def _diurnal(hours: np.ndarray, low: float, high: float) -> np.ndarray:
    """Load rising from `low` at 04:00 to `high` at 14:00 and back (a smooth day)."""
    return low + (high - low) * 0.5 * (1 - np.cos(2 * np.pi * ((hours - 4) % 24) / 24.0))


class Builder:
    def __init__(self, days: int = 28, step: int = 300, seed: int = 1, start: int = START):
        self.days, self.step, self.start = days, step, start
        self.steps = days * DAY // step
        self.t = start + np.arange(self.steps) * step
        self.hours = (self.t % DAY) / 3600.0
        self.weekday = ((self.t - start) // DAY) % 7          # 0 = Monday
        self.rng = np.random.default_rng(seed)
        self.series: list[GpuSeries] = []
        self.owners: dict = {}
        self.running: dict = {}
        self.labels: dict = {}

    def noise(self, scale: float) -> np.ndarray:
        return self.rng.normal(0.0, scale, self.steps)

    def pod(self, namespace: str, pod: str, owner_kind: str, owner: str, up=None, labels: dict | None = None) -> None:
        """A pod as kube-state-metrics lists it (kube_pod_owner, kube_pod_labels), running where ``up``."""
        self.owners[(namespace, pod)] = (owner_kind, owner)
        up = np.ones(self.steps) if up is None else up.astype(float)
        key = (namespace, "<none>", pod) if owner_kind == "<none>" else (namespace, owner_kind, owner)
        self.running[key] = PodCounts.of(self.running[key].full(self.steps) + up if key in self.running else up)
        if labels:
            self.labels[(namespace, pod)] = tuple(sorted((label_key(k), v) for k, v in labels.items()))

    def device(self, node, gpu, namespace, pod, mem, act, model="h200-141gb", instance=None, profile=None,
               up=None) -> GpuSeries:
        up = np.ones(self.steps, dtype=bool) if up is None else up
        s = GpuSeries(node=node, gpu=gpu, uuid="GPU-%s-%d" % (node, gpu), instance=instance, profile=profile,
                      model=model, namespace=namespace, pod=pod,
                      fb_used=None if mem is None else np.where(up, np.maximum(mem, 0), np.nan),
                      active=np.where(up, np.clip(act, 0, 1), np.nan))
        self.series.append(s)
        return s

    def compact(self) -> None:
        for s in self.series:
            s.compact()

    def usage(self) -> UsageData:
        return UsageData(start=float(self.start), step=self.step, steps=self.steps, series=self.series,
                         owners=self.owners, pods_running=self.running,
                         source="synthetic", labels=self.labels)


def example_day(days: int = 28, seed: int = 1, duplicate_shared: bool = False, classifier_memory: bool = False,
                gap_node: str | None = None, change_after_day: int | None = None, compact: bool = False) -> UsageData:
    """The four-GPU example day: vLLM on GPU 0, three MIG services on GPU 1, five notebooks
    time-sliced on GPU 2 (lent whole at night), a nightly two-GPU fine-tune on GPUs 2 and 3."""
    b = Builder(days=days, seed=seed)
    night = (b.hours >= 19) | (b.hours < 7)
    workday = (b.weekday < 5) & (b.hours >= 8) & (b.hours < 18)
    # GPU 0: vLLM, a flat reservation, busy by day.
    b.pod("prod-serving", "vllm-chat-6c9f7d8b5d-x2k9p", "ReplicaSet", "vllm-chat-6c9f7d8b5d")
    b.device("gpu01", 0, "prod-serving", "vllm-chat-6c9f7d8b5d-x2k9p", 94801 + b.noise(3),
             _diurnal(b.hours, 0.15, 0.92) + b.noise(0.04))
    # GPU 1: MIG, activity relative to each instance.
    b.pod("prod-serving", "embeddings-7d4b9c6f8-q8w2e", "ReplicaSet", "embeddings-7d4b9c6f8")
    b.device("gpu01", 1, "prod-serving", "embeddings-7d4b9c6f8-q8w2e", 1647 - 80 * b.rng.random(b.steps),
             _diurnal(b.hours, 0.02, 0.45) + b.noise(0.05), instance="3", profile="1g.18gb")
    b.pod("prod-serving", "classifier-5f6d8c7b9-h7j3k", "ReplicaSet", "classifier-5f6d8c7b9")
    b.device("gpu01", 1, "prod-serving", "classifier-5f6d8c7b9-h7j3k",
             (1411 - 50 * b.rng.random(b.steps)) if classifier_memory else None,   # FB_* missing on this instance
             np.where(b.rng.random(b.steps) < 0.03, 0.3, 0.004), instance="4", profile="1g.18gb")
    speech_act = _diurnal(b.hours, 0.05, 0.55) + b.noise(0.06)
    if change_after_day is not None:
        speech_act = np.where(b.t >= b.start + change_after_day * DAY, 1.0, speech_act)
    b.pod("prod-serving", "speech-to-text-8b7c6d5f4-m4n5b", "ReplicaSet", "speech-to-text-8b7c6d5f4")
    b.device("gpu01", 1, "prod-serving", "speech-to-text-8b7c6d5f4-m4n5b", 2205 - 100 * b.rng.random(b.steps),
             speech_act, instance="1", profile="2g.35gb")
    # GPU 2: five notebooks time-sliced by day (the exporter gives the GPU to one pod, or to all).
    for i in range(5):
        b.pod("data-science", "notebooks-%d" % i, "StatefulSet", "notebooks")
    held = 5 * 6200 + 1350 * workday + b.noise(40)
    bursts = np.where(workday, np.clip(0.29 + b.noise(0.08), 0, 1), 0.0)
    day = ~night
    for i in range(5 if duplicate_shared else 1):
        b.device("gpu01", 2, "data-science", "notebooks-%d" % i, held, bursts, up=day)
    # GPUs 2 (lent whole at night) and 3: the fine-tune, one Job a night, 19:30 to 06:30.
    run = (b.hours >= 19.5) | (b.hours < 6.5)
    night_index = ((b.t - b.start - 19.5 * 3600) // DAY).astype(int)
    for n in range(-1, days):
        up = run & (night_index == n)
        if not up.any():
            continue
        job = "fine-tune-%d" % (29400000 + n)
        b.pod("training", "%s-abcde" % job, "Job", job, up)
        for gpu in (2, 3):
            b.device("gpu01", gpu, "training", "%s-abcde" % job, 19137 + b.noise(20),
                     0.85 + b.noise(0.08), up=up)
    if compact:
        b.compact()
    if gap_node:
        for s in b.series:
            if s.node == gap_node:
                hole = (b.t > b.start + 3 * DAY) & (b.t < b.start + 8 * DAY)
                for name in ("fb_used", "active"):
                    arr = getattr(s, name)
                    if arr is not None:
                        arr[hole[s.offset:s.offset + len(arr)]] = np.nan
    return b.usage()


# --------------------------------------------------------------------------- shaped like a real cluster

NOTEBOOK_USERS = ("alice", "bob", "chen", "dana", "eve")     # eve runs a Kubeflow Notebook (StatefulSet eve-gpu)
CONTEXT_MIB = 480                # a process's CUDA context on the GPU, per pod
LABELER_MIB = 3072               # the shared_service's pod: a small labelling model on the notebooks' GPU
LABELER_ACTIVITY = 0.1
FINE_TUNE_MIB = 19137            # per GPU


def _local_hours(b: Builder, zone: str | None):
    """Hour of the day (float) and weekday of each step on the clock ``zone`` (UTC without one)."""
    if not zone:
        return b.hours, b.weekday
    import datetime
    from zoneinfo import ZoneInfo
    tz = ZoneInfo(zone)
    local = [datetime.datetime.fromtimestamp(int(t), tz) for t in b.t]
    return (np.array([d.hour + d.minute / 60.0 for d in local]), np.array([d.weekday() for d in local]))


def real_cluster_day(days: int = 28, seed: int = 1, duplicate_shared: bool = True, people_timezone: str | None = None,
                     user_mib: dict | None = None, shared_service: bool = False, outage_day: float | None = None,
                     compact: bool = False, start: int = START, fine_tune_shape: str = "one-pod",
                     fine_tune_mib: float = None, fine_tune_from_day: int | None = None, eve_namespace: str = "data-science",
                     experiments: int = 0) -> tuple[UsageData, dict]:
    """The four-GPU example day with the shapes real clusters have, and its ground truth:

    * Deployments ``<name>-<10-char hash>-<5>`` (vLLM rolled out once, to a 9-character hash);
    * the notebooks as JupyterHub's bare pods ``jupyter-<user>`` (owner ``<none>``) and one
      Kubeflow Notebook (StatefulSet ``eve-gpu``, pod ``eve-gpu-0``), all time-sliced on GPU 2:
      up from login (09:00-10:30 on the people's clock, weekdays) until culled (17:30-19:00),
      each holding ``user_mib[user]`` plus its CUDA context, busy 30 % of its working hours;
      the device's series copied to every pod on it (``duplicate_shared``) or given to the
      first pod up;
    * with ``shared_service``, a second workload ``labeler`` (a Deployment of team
      data-science, LABELER_MIB plus its context, activity LABELER_ACTIVITY) on the same GPU on
      weekdays 08:00-19:00 (people's clock): one device, services of different owners;
    * the fine-tune's nights (19:30-06:30 UTC) on GPUs 2 and 3: a CronJob's Job
      ``fine-tune-<minute>``, a Kubeflow TrainJob (Job ``fine-tune-<id>-node-0``) or a PyTorchJob
      (pod ``fine-tune-rerun-<id>-master-0``), pods labelled ``kueue.x-k8s.io/queue-name:
      training``; the last three completed pods still listed (not running);
    * with ``outage_day``, node gpu01 reports nothing for two days from that day;
    * ``fine_tune_shape``: ``one-pod`` (each run one pod on both GPUs, as above), ``two-pods``
      (each run a PyTorchJob ``fine-tune-rerun-<id>``, pods ``-master-0`` on GPU 2 and
      ``-worker-0`` on GPU 3), ``changes`` (``two-pods`` for the nights before day ``days // 2``,
      then a TrainJob's one pod on both GPUs); ``fine_tune_mib`` per GPU (FINE_TUNE_MIB), flat;
      with ``fine_tune_from_day``, runs from that night on only;
    * ``eve_namespace``: the namespace of eve's Kubeflow Notebook (Kubeflow gives each user a
      profile namespace);
    * ``experiments``: that many daily Jobs ``experiment-<n>`` (n = 1, 2, ...; one pod on GPU 3,
      10:00-11:00 UTC) of team training, ending with the window, that no workload matches.

    ``start``: the first sample (a Monday 00:00 UTC; DST_START has Europe's DST change inside 28 days).
    """
    users = dict(user_mib or {u: 6144 for u in NOTEBOOK_USERS})
    b = Builder(days=days, seed=seed, start=start)
    rng = np.random.default_rng(seed + 100)
    hours, weekday = _local_hours(b, people_timezone)
    truth: dict = {"users": users, "context_mib": CONTEXT_MIB, "people_timezone": people_timezone or "UTC"}
    # GPU 0: vLLM, rolled out on day 10 (a new ReplicaSet with a 9-character hash).
    rollout = b.t >= b.start + 10 * DAY
    vllm = []
    for owner, suffix, up in (("vllm-chat-6c9f7d8b5d", "x2k9p", ~rollout), ("vllm-chat-7f8d9c6b4", "q7w3z", rollout)):
        pod = "%s-%s" % (owner, suffix)
        b.pod("prod-serving", pod, "ReplicaSet", owner, up=up)
        b.device("gpu01", 0, "prod-serving", pod, 94801 + b.noise(3), _diurnal(b.hours, 0.15, 0.92) + b.noise(0.04),
                 up=up)
        vllm.append(pod)
    # GPU 1: MIG.
    mig_services = (("embeddings", "embeddings-7d4b9c6f8q", "q8w2e", "3", "1g.18gb", 1647),
                    ("classifier", "classifier-5f6d8c7b9x", "h7j3k", "4", "1g.18gb", 1411),
                    ("speech-to-text", "speech-to-text-8b7c6d5f4m", "m4n5b", "1", "2g.35gb", 2205))
    for _name, owner, suffix, inst, prof, mem in mig_services:
        pod = "%s-%s" % (owner, suffix)
        b.pod("prod-serving", pod, "ReplicaSet", owner)
        b.device("gpu01", 1, "prod-serving", pod, mem - 80 * b.rng.random(b.steps),
                 _diurnal(b.hours, 0.05, 0.5) + b.noise(0.05), instance=inst, profile=prof)
    # GPU 2 by day: the notebooks (and the labeler).
    ups, mems, acts, pods = {}, {}, {}, {}
    sessions = {}
    day_index = ((b.t - b.start) // DAY).astype(int)
    for k, user in enumerate(NOTEBOOK_USERS):
        up = np.zeros(b.steps, dtype=bool)
        login = 9.0 + rng.uniform(0, 1.5, days + 1)
        culled = 17.5 + rng.uniform(0, 1.5, days + 1)
        off = rng.random(days + 1) < 0.05
        for d in range(days):
            if off[d]:
                continue
            up |= (day_index == d) & (weekday < 5) & (hours >= login[d]) & (hours < culled[d])
        pod = "jupyter-%s" % user if k < len(NOTEBOOK_USERS) - 1 else "%s-gpu-0" % user
        if k < len(NOTEBOOK_USERS) - 1:
            b.pod("data-science", pod, "<none>", "<none>", up=up,
                  labels={"component": "singleuser-server", "hub.jupyter.org/username": user})
        else:
            b.pod(eve_namespace, pod, "StatefulSet", "%s-gpu" % user, up=up, labels={"notebook-name": "%s-gpu" % user})
        busy = up & (hours >= 9) & (hours < 18) & (rng.random(b.steps) < 0.3)
        ups[pod], mems[pod] = up, np.where(up, users[user] + CONTEXT_MIB, 0.0)
        acts[pod] = np.where(busy, np.clip(0.3 + rng.normal(0, 0.05, b.steps), 0, 1), 0.0)
        pods[pod] = user
        sessions[pod] = int(np.count_nonzero(np.diff(up.astype(int)) == 1))
    truth["notebook_pods"] = pods
    truth["sessions"] = sessions
    if shared_service:
        up = (weekday < 5) & (hours >= 8) & (hours < 19)
        pod = "labeler-5c7d9f8b6q-t4k8m"
        b.pod("data-science", pod, "ReplicaSet", "labeler-5c7d9f8b6q", up=up)
        ups[pod], mems[pod] = up, np.where(up, LABELER_MIB + CONTEXT_MIB, 0.0)
        acts[pod] = np.where(up, LABELER_ACTIVITY, 0.0)
        truth["labeler"] = {"pod": pod, "memory_mib": LABELER_MIB + CONTEXT_MIB, "activity": LABELER_ACTIVITY}
    device_up = np.any(list(ups.values()), axis=0)
    device_mem = np.sum(list(mems.values()), axis=0)
    device_act = np.clip(np.sum(list(acts.values()), axis=0), 0, 1)
    first_up = np.full(b.steps, "", dtype=object)
    for pod, up in reversed(list(ups.items())):
        first_up[up] = pod
    for pod, up in ups.items():
        reported = up if duplicate_shared else (first_up == pod)
        if reported.any():
            ns = eve_namespace if pod.startswith("eve-") else "data-science"
            b.device("gpu01", 2, ns, pod, device_mem + b.noise(5), device_act, up=reported & device_up,
                     instance="0", profile="7g.141gb")
    truth["per_sharer_mib"] = {pod: float(m.max()) for pod, m in mems.items()}
    truth["most_up_at_once"] = int(np.sum([u.astype(int) for u in ups.values()], axis=0).max())     # on the device
    truth["notebooks_up_at_once"] = int(np.sum([ups[p].astype(int) for p in pods], axis=0).max())
    # GPUs 2 (lent whole at night) and 3: the fine-tune's runs.
    run = (b.hours >= 19.5) | (b.hours < 6.5)
    night_index = ((b.t - b.start - 19.5 * 3600) // DAY).astype(int)
    done: list = []
    ft_pods = {}
    per_gpu = FINE_TUNE_MIB if fine_tune_mib is None else fine_tune_mib
    for n in range(-1, days):
        up = run & (night_index == n)
        if not up.any() or fine_tune_from_day is not None and n < fine_tune_from_day:
            continue
        if fine_tune_shape == "two-pods" or fine_tune_shape == "changes" and n < days // 2:
            owner = "fine-tune-rerun-%06x" % (n + 4096)
            for gpu, role in ((2, "master"), (3, "worker")):
                pod = "%s-%s-0" % (owner, role)
                b.pod("training", pod, "PyTorchJob", owner, up=up, labels={"kueue.x-k8s.io/queue-name": "training"})
                b.device("gpu01", gpu, "training", pod, per_gpu + b.noise(20), 0.85 + b.noise(0.08), up=up,
                         instance="0" if gpu == 2 else None, profile="7g.141gb" if gpu == 2 else None)
                ft_pods[pod] = ("PyTorchJob", owner)
            continue
        if fine_tune_shape == "changes":
            owner_kind, owner = "Job", "fine-tune-k%04d-node-0" % (n + 1000)
            pod = "%s-0-%s" % (owner, "x7k2p")
        elif n % 5 in (0, 1, 2):
            owner_kind, owner = "Job", "fine-tune-%d" % (29400000 + 1440 * n)
            pod = "%s-%s" % (owner, "abcde")
        elif n % 5 == 3:
            owner_kind, owner = "Job", "fine-tune-k%04d-node-0" % (n + 1000)
            pod = "%s-0-%s" % (owner, "x7k2p")
        else:
            owner_kind, owner = "PyTorchJob", "fine-tune-rerun-%06x" % (n + 4096)
            pod = "%s-master-0" % owner
        b.pod("training", pod, owner_kind, owner, up=up, labels={"kueue.x-k8s.io/queue-name": "training"})
        for old_pod, old_kind, old_owner in done[-3:]:      # completed pods still listed, not running
            b.owners[("training", old_pod)] = (old_kind, old_owner)
        done.append((pod, owner_kind, owner))
        ft_pods[pod] = (owner_kind, owner)
        for gpu in (2, 3):
            b.device("gpu01", gpu, "training", pod, per_gpu + b.noise(20), 0.85 + b.noise(0.08), up=up,
                     instance="0" if gpu == 2 else None, profile="7g.141gb" if gpu == 2 else None)
    truth["fine_tune_pods"] = ft_pods
    truth["fine_tune_mib_per_gpu"] = per_gpu
    exp_pods = {}
    for k in range(experiments):
        day = days - experiments + k
        up = (day_index == day) & (b.hours >= 10) & (b.hours < 11)
        owner = "experiment-%d" % (k + 1)
        pod = "%s-%s" % (owner, "q9z8w")
        b.pod("training", pod, "Job", owner, up=up)
        b.device("gpu01", 3, "training", pod, 8192 + b.noise(10), 0.6 + b.noise(0.05), up=up)
        exp_pods[pod] = owner
    truth["experiment_pods"] = exp_pods
    truth["vllm_pods"] = vllm
    if outage_day is not None:
        hole = (b.t >= b.start + outage_day * DAY) & (b.t < b.start + (outage_day + 2) * DAY)
        truth["outage"] = {"node": "gpu01", "from_step": int(np.flatnonzero(hole)[0]), "steps": int(hole.sum())}
        for s in b.series:
            for name in ("fb_used", "active"):
                arr = getattr(s, name)
                if arr is not None:
                    arr[hole[s.offset:s.offset + len(arr)]] = np.nan
    if compact:
        b.compact()
    return b.usage(), truth


# --------------------------------------------------------------------------- small inference on an L40S fleet

# Per pod, constant: (MiB held, activity of the card); shaped like the calibration's services (an
# embeddings service, a text classifier, a speech-to-text encoder), sized for an L40S.
L40S_SERVICES = {"embeddings": (1600.0, 0.08), "classifier": (1400.0, 0.06), "speech-to-text": (2200.0, 0.22)}
L40S_PODS = {"embeddings": 2, "classifier": 2, "speech-to-text": 1}
HEAVY_NEIGHBOUR = (20000.0, 0.9)       # a fine-tune on the speech service's card: MiB, activity
NOTEBOOK_MIB = 6000.0


def l40s_fleet(days: int = 28, seed: int = 3, heavy_neighbour: bool = False) -> tuple[UsageData, dict]:
    """Three small inference services of team production time-sliced together on node l40s-a
    (2 L40S): embeddings (2 pods) and classifier (2 pods) on GPU 0, speech-to-text (1 pod) on
    GPU 1 with one embeddings pod half of each day (so the per-pod weights separate them);
    four notebooks of team data-science time-sliced on l40s-b (2 L40S). Each inference pod holds
    and draws constant amounts (``L40S_SERVICES``) and is restarted for an hour at a different
    time every day (so its pods are up at least 95 % of the time, apart from the others at
    times). Every pod of a device carries the device's series (dcgm-exporter copies them).
    With ``heavy_neighbour`` a nightly fine-tune (team training, ``HEAVY_NEIGHBOUR``) runs on
    l40s-a GPU 1 next to speech-to-text, 01:00-11:00 (while embeddings' second pod is on GPU 0).

    Returns the usage and the truth: per service its per-pod MiB and activity, and per device the
    pods on it."""
    b = Builder(days=days, seed=seed)
    hour = b.hours.astype(int)
    placement = {("l40s-a", 0): [("embeddings", 0), ("embeddings", 1), ("classifier", 0), ("classifier", 1)],
                 ("l40s-a", 1): [("speech-to-text", 0), ("embeddings", 1)]}
    up = {}
    for k, (name, count) in enumerate(L40S_PODS.items()):
        for i in range(count):
            pod = "%s-5f6d8c7b9-%s" % (name, "abcde"[i] * 5)
            b.pod("prod-serving", pod, "ReplicaSet", "%s-5f6d8c7b9" % name)
            up[(name, i)] = (pod, hour != (3 * k + 5 * i + 1) % 24)        # restarted one hour a day
    # the second embeddings pod is on GPU 1 from 12:00 to 24:00, on GPU 0 otherwise
    moving = ("embeddings", 1)
    where = {("l40s-a", 0): lambda name, i: up[(name, i)][1] & (((name, i) != moving) | (b.hours < 12)),
             ("l40s-a", 1): lambda name, i: up[(name, i)][1] & (((name, i) != moving) | (b.hours >= 12))}
    night = (b.hours >= 1) & (b.hours < 11)
    for (node, gpu), pods in placement.items():
        on = {p: where[(node, gpu)](*p) for p in pods}
        mem = sum(on[p] * L40S_SERVICES[p[0]][0] for p in pods)
        act = sum(on[p] * L40S_SERVICES[p[0]][1] for p in pods)
        heavy = heavy_neighbour and gpu == 1
        if heavy:
            mem = mem + night * HEAVY_NEIGHBOUR[0]
            act = act + night * HEAVY_NEIGHBOUR[1]
        for p in pods:
            b.device(node, gpu, "prod-serving", up[p][0], mem, act, model="l40s", up=on[p])
        if heavy:
            night_index = ((b.t - b.start) // DAY).astype(int)
            for n in range(days):
                run = night & (night_index == n)
                if run.any():
                    job = "fine-tune-%d" % (29400000 + n)
                    b.pod("training", "%s-abcde" % job, "Job", job, run)
                    b.device(node, gpu, "training", "%s-abcde" % job, mem, act, model="l40s", up=run)
    # l40s-b: four notebooks on GPU 0, each holding NOTEBOOK_MIB, busy in bursts at work hours
    workday = (b.weekday < 5) & (b.hours >= 8) & (b.hours < 18)
    for i in range(4):
        b.pod("data-science", "notebooks-%d" % i, "StatefulSet", "notebooks")
    bursts = np.where(workday & (b.rng.random(b.steps) < 0.3), 0.6, 0.0)
    for i in range(4):
        b.device("l40s-b", 0, "data-science", "notebooks-%d" % i, 4 * NOTEBOOK_MIB + b.noise(20), bursts, model="l40s")
    return b.usage(), {"services": dict(L40S_SERVICES), "pods": dict(L40S_PODS), "placement": placement}
