"""benchmarks/advise_prometheus.py writes advise_fleet's history as dcgm-exporter and
kube-state-metrics series: what it writes is checked here against the fleet's layout as the
docstring of advise_fleet describes it and against dcgm-exporter's units (read back from the
record format of tests/prometheus/series_file.py by hand), and the fleet counts a pod without a
controller as its own group, as fetch_usage does."""

from __future__ import annotations

import io
import json
import struct
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

# pylint: disable=wrong-import-position
import advise_fleet  # noqa: E402
import advise_prometheus  # noqa: E402

H200_MIB = 143771          # nvidia-smi's memory.total of an H200 (141 GB)
SLICE_MIB = {"1g.18gb": 16384, "2g.35gb": 33280}   # an H200's MIG instances (nvidia-smi mig -lgip)


def read_records(data: bytes) -> list:
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        head = json.loads(data[pos + 4:pos + 4 + n])
        pos += 4 + n
        values = np.frombuffer(data, "<f8", head["count"], pos)
        pos += 8 * head["count"]
        out.append((head, values))
    return out


def one_node(days: int = 3):
    pods_up: dict = {}
    usage, _variables = advise_fleet.fleet(1, days, exporter=True, pods_up=pods_up)
    return usage, pods_up


def test_a_pod_without_controller_is_its_own_group():
    usage, _pods = one_node()
    bare = sorted(k for k in usage.pods_running if k[1] == "<none>")
    assert bare == [("data-science", "<none>", "jupyter-0000-%d" % i) for i in range(5)]
    day = usage.pods_running[bare[0]].full(usage.steps)
    assert set(np.unique(day)) == {0.0, 1.0}       # one pod, up by day only


def test_dcgm_exporter_series_in_its_units_and_labels():
    usage, _pods = one_node()
    f = io.BytesIO()
    advise_prometheus.exporter_records(f, usage)
    records = read_records(f.getvalue())
    by_device: dict = {}
    for head, values in records:
        labels = head["labels"]
        assert head["step_ms"] == 300000
        assert labels["modelName"] == "NVIDIA H200" and labels["Hostname"] == "gpu0000"
        assert labels["job"] == "nvidia-dcgm-exporter" and labels["namespace"] == "gpu-operator"
        assert labels["exported_namespace"] and labels["exported_pod"]
        key = (labels["gpu"], labels.get("GPU_I_ID"), labels["exported_pod"], head["start_ms"])
        by_device.setdefault(key, {})[labels["__name__"]] = (values, labels)
    metrics = Counter(frozenset(m) for m in by_device.values())
    whole = frozenset({"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                       "DCGM_FI_DEV_GPU_UTIL"})
    # per server 2 LLM GPUs, 1 notebook GPU reported to one pod, 1 copied to 5 pods, a
    # two-GPU fine-tune per night (3 days: the night before and 3 nights begun); 6 MIG slices
    assert metrics == {whole: 2 + 1 + 5 + 2 * 4, whole - {"DCGM_FI_DEV_GPU_UTIL"}: 6}
    for key, got in by_device.items():
        used, labels = got["DCGM_FI_DEV_FB_USED"]
        free = got["DCGM_FI_DEV_FB_FREE"][0]
        active = got["DCGM_FI_PROF_GR_ENGINE_ACTIVE"][0]
        ok = ~np.isnan(used)
        assert ok.any() and np.array_equal(ok, ~np.isnan(active))
        assert np.array_equal(used[ok], np.round(used[ok]))                    # whole MiB
        card = SLICE_MIB[labels["GPU_I_PROFILE"]] if key[1] else H200_MIB
        assert np.array_equal(used[ok] + free[ok], np.full(ok.sum(), float(card)))
        assert ((active[ok] >= 0) & (active[ok] <= 1)).all()
        assert np.array_equal(active[ok], np.round(active[ok], 6))
        if "DCGM_FI_DEV_GPU_UTIL" in got:
            util = got["DCGM_FI_DEV_GPU_UTIL"][0]
            assert np.array_equal(util[ok], np.round(active[ok] * 100))


def test_kube_state_metrics_series_while_each_pod_is_listed():
    usage, pods = one_node()
    f = io.BytesIO()
    advise_prometheus.ksm_records(f, usage, pods)
    records = read_records(f.getvalue())
    owner = {(h["labels"]["namespace"], h["labels"]["pod"]): (h, v) for h, v in records
             if h["labels"]["__name__"] == "kube_pod_owner"}
    phase = {(h["labels"]["namespace"], h["labels"]["pod"]): (h, v) for h, v in records
             if h["labels"]["__name__"] == "kube_pod_status_phase"}
    # per server 2 LLM pods, 6 MIG services, 5 + 5 notebooks, a fine-tune Job pod per night
    assert len(owner) == len(phase) == 2 + 6 + 10 + 4
    jupyter = owner[("data-science", "jupyter-0000-0")][0]["labels"]
    assert (jupyter["owner_kind"], jupyter["owner_name"], jupyter["owner_is_controller"]) == ("<none>",) * 3
    job_pod = next(k for k in owner if k[0] == "training")
    head, values = owner[job_pod]
    assert head["labels"]["owner_kind"] == "Job" and head["labels"]["owner_is_controller"] == "true"
    # a night's run: 19:30 to 06:30, 132 five-minute steps (fewer for the runs cut by the window)
    assert 0 < np.count_nonzero(values == 1) <= 132
    assert phase[job_pod][0]["labels"]["phase"] == "Running"
    assert np.array_equal(phase[job_pod][1], values, equal_nan=True)
