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
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage_advisor import GpuSeries, UsageData

DAY = 86400
# A Monday 00:00 UTC, so weekdays and hours are easy to reason about.
START = 1795910400 - 1795910400 % DAY


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
        self.running[key] = self.running.get(key, np.zeros(self.steps)) + up
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
                         owners=self.owners, pods_running=self.running, source="synthetic", labels=self.labels)


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
