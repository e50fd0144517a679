"""Advise a fleet: 28 days of 1,000 GPUs at 5-minute steps.

125 servers x 8 GPUs (H200 and A100 80GB servers in turn); per server two whole GPUs serving
LLMs (a flat 90 % reservation, diurnal load), two MIG GPUs with three small services each,
two time-sliced GPUs with five notebooks each (busy in working hours; on one a StatefulSet's
pods, the device reported to one of them; on the other JupyterHub's bare pods, recognised by a
gpushare_advise_match selector each, the device's series copied to all five), two GPUs for a
nightly two-GPU fine-tune (a Job per night). 1,375 services, 9,000 device series of up to 8,064
samples each.

The history is built in-process as UsageData (what fetch_usage returns), so this benchmark
times the advisor itself (advise: workload identity, devices read once and shared out, evidence, kinds,
choices, stability in both halves, quotas, windows, placement, what to buy, the planner's check
of the proposal and its repairs), the files (report, charts, YAML) and a second planner check,
and separately the decoding of one Prometheus answer (8 servers, one metric: the
unit fetch_usage reads) through the same code, to extrapolate the fetch (decode_one_answer_s;
decode_one_answer_json_s is the same answer through json.loads and a list per sample).
benchmarks/advise_prometheus.py writes the same history (fleet(exporter=True)) into a real
Prometheus 2.42 (tsdb-backfill, seconds where promtool took hours) and times advise.yml itself,
queries included.

    make dev-venv collection-link && .venv/bin/python benchmarks/advise_fleet.py [--nodes 125] [--days 28]

Target on 2 cores: advise under 60 s and under 1 GB peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import render_advice, usage_advisor as ua  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage as ua_usage  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.identity import NO_OWNER  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import PrometheusClient  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402

DAY = 86400
MODELS = ("h200-141gb", "a100-80gb")
CARD_MIB = {"h200-141gb": 143771, "a100-80gb": 81920}
MIG = {"h200-141gb": ("1g.18gb", "1g.18gb", "2g.35gb"), "a100-80gb": ("1g.10gb", "1g.10gb", "2g.20gb")}
SLICE_MIB = {"1g.18gb": 16384, "2g.35gb": 33280, "1g.10gb": 9728, "2g.20gb": 19968}
TEAMS = [{"name": "production", "namespaces": ["prod-serving"], "production": True, "priority": 1000},
         {"name": "inference", "namespaces": ["inference"], "priority": 800},
         {"name": "data-science", "namespaces": ["data-science"], "priority": 500},
         {"name": "training", "namespaces": ["training"], "priority": 100}]


def fleet(nodes: int, days: int, step: int = 300, seed: int = 3, exporter: bool = False, pods_up: dict | None = None):
    """The history (UsageData) and the inventory variables. ``exporter``: values as
    dcgm-exporter reports them (memory in whole MiB, activity to 6 decimals), with
    DCGM_FI_DEV_FB_FREE (the device's MiB less the used) and a UUID per GPU, so the same
    history written to Prometheus reads back the same. ``pods_up`` (a dict) gets
    (namespace, pod) -> PodCounts of when kube-state-metrics lists the pod."""
    rng = np.random.default_rng(seed)
    steps = days * DAY // step
    start = 1795910400 - days * DAY
    t = start + np.arange(steps) * step
    hours = (t % DAY) / 3600.0
    weekday = ((t - start) // DAY) % 7
    diurnal = 0.5 * (1 - np.cos(2 * np.pi * ((hours - 4) % 24) / 24.0))
    workday = (weekday < 5) & (hours >= 8) & (hours < 18)
    run = (hours >= 19.5) | (hours < 6.5)
    night_index = ((t - start - 19.5 * 3600) // DAY).astype(int)
    series, owners, running = [], {}, {}
    hosts, workloads, match = {}, [], {}

    def pod(ns, name, kind, owner, up=None):
        owners[(ns, name)] = (kind, owner)
        # a pod without a controller is its own group, as fetch_usage counts it
        key = (ns, kind, name if kind == NO_OWNER else owner)
        up = np.ones(steps) if up is None else up.astype(float)
        running[key] = ua.PodCounts.of(running[key].full(steps) + up if key in running else up)
        if pods_up is not None:
            pods_up[(ns, name)] = ua.PodCounts.of(up)

    def device(node, gpu, ns, name, mem, act, model, instance=None, profile=None, up=None):
        up = np.ones(steps, dtype=bool) if up is None else up
        act = np.clip(act, 0, 1)
        free, uuid = None, ""
        if exporter:
            mem, act = np.round(mem), np.round(act, 6)
            free = np.where(up, (SLICE_MIB[profile] if profile else CARD_MIB[model]) - mem, np.nan)
            uuid = "GPU-%08x-0000-4000-8000-%012x" % (n, gpu)
        series.append(ua.GpuSeries(node=node, gpu=gpu, uuid=uuid, instance=instance, profile=profile, model=model,
                                   namespace=ns, pod=name, fb_used=np.where(up, mem, np.nan).astype(np.float64),
                                   fb_free=free, active=np.where(up, act, np.nan)).compact())

    for n in range(nodes):
        node = "gpu%04d" % n
        model = MODELS[n % 2]
        card = CARD_MIB[model]
        for g in (0, 1):
            name = "llm-%04d-%d" % (n, g)
            pod("prod-serving", "%s-5d8f7c9b6-x2k9p" % name, "ReplicaSet", "%s-5d8f7c9b6" % name)
            device(node, g, "prod-serving", "%s-5d8f7c9b6-x2k9p" % name, 0.9 * card + rng.normal(0, 3, steps),
                   0.15 + 0.8 * diurnal + rng.normal(0, 0.04, steps), model)
            workloads.append({"name": name, "team": "production", "kind": "serving", "sharing": "whole",
                              "memory_gib": int(0.9 * card / 1024)})
        for g in (2, 3):
            for i, profile in enumerate(MIG[model]):
                name = "svc-%04d-%d-%d" % (n, g, i)
                pod("inference", "%s-7d4b9c6f8-q8w2e" % name, "ReplicaSet", "%s-7d4b9c6f8" % name)
                device(node, g, "inference", "%s-7d4b9c6f8-q8w2e" % name,
                       SLICE_MIB[profile] * 0.4 + rng.normal(0, 30, steps),
                       0.05 + 0.5 * diurnal + rng.normal(0, 0.05, steps), model, instance=str(i + 1), profile=profile)
                workloads.append({"name": name, "team": "inference", "kind": "serving", "isolation": "hardware",
                                  "memory_gib": round(SLICE_MIB[profile] * 0.5 / 1024, 1)})
        day = ~run
        for g in (4, 5):
            name = "nb-%04d-%d" % (n, g)
            mem = 5 * 6200 + 1350 * workday + rng.normal(0, 40, steps)
            act = np.where(workday, 0.29 + rng.normal(0, 0.08, steps), 0.0)
            if g == 4:      # a StatefulSet's pods; the exporter gives the device to one of them
                for i in range(5):
                    pod("data-science", "%s-%d" % (name, i), "StatefulSet", name)
                device(node, g, "data-science", "%s-0" % name, mem, act, model, up=day)
            else:           # JupyterHub's pods (no controller), the device's series copied to each
                for i in range(5):
                    pod("data-science", "jupyter-%04d-%d" % (n, i), "<none>", "<none>", up=day)
                    device(node, g, "data-science", "jupyter-%04d-%d" % (n, i), mem, act, model, up=day)
                match[name] = {"owner_kind": "<none>", "name_prefix": "jupyter-%04d-" % n}
            workloads.append({"name": name, "team": "data-science", "kind": "notebook", "sharing": "timeslice",
                              "replicas": 5})
        name = "ft-%04d" % n
        for night in range(-1, days):
            up = run & (night_index == night)
            if not up.any():
                continue
            job = "%s-%d" % (name, 29400000 + night)
            pod("training", "%s-abcde" % job, "Job", job, up)
            for g in (6, 7):
                device(node, g, "training", "%s-abcde" % job, 19137 + rng.normal(0, 20, steps),
                       0.85 + rng.normal(0, 0.08, steps), model, up=up)
        workloads.append({"name": name, "team": "training", "kind": "training", "sharing": "whole", "gpus": 2,
                          "memory_gib": 40})
        hosts[node] = {"gpu_model": model, "gpu_count": 8, "gpus": [
            {"index": 0, "mode": "whole", "team": "production"}, {"index": 1, "mode": "whole", "team": "production"},
            {"index": 2, "mode": "mig", "team": "inference"}, {"index": 3, "mode": "mig", "team": "inference"},
            {"index": 4, "mode": "timeslice", "team": "data-science", "replicas": 5},
            {"index": 5, "mode": "timeslice", "team": "data-science", "replicas": 5},
            {"index": 6, "mode": "whole", "team": "training"}, {"index": 7, "mode": "whole", "team": "training"}]}
    usage = ua.UsageData(start=float(start), step=step, steps=steps, series=series, owners=owners,
                         pods_running=running,
                         source="in-process synthetic fleet")
    variables = {"gpushare_teams": TEAMS, "gpushare_nodes": hosts, "gpushare_workloads": workloads,
                 "gpushare_policy": {"cluster_name": "bench", "gpu_prices": {"h200": 32000, "a100-80gb": 15000}},
                 "gpushare_advise_match": match}
    return usage, variables


def decode_one_answer(usage: ua.UsageData, nodes_per_query: int = ua.NODES_PER_QUERY) -> tuple[float, float, int]:
    """Seconds to decode one query_range answer (one metric of NODES_PER_QUERY servers) onto
    the grid as fetch_usage does (PrometheusClient._decode_matrix: the "values" arrays read by
    numpy), the same through json.loads and a list per sample (the decoder before it), and the
    answer's size in bytes. Both must give the same series."""
    chosen = sorted({s.node for s in usage.series})[:nodes_per_query]
    times = usage.start + np.arange(usage.steps) * usage.step
    result = []
    for s in usage.series:
        if s.node in chosen:
            mem = s.full("fb_used", usage.steps)
            ok = ~np.isnan(mem)
            result.append({"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "Hostname": s.node, "gpu": str(s.gpu)},
                           "values": [[float(t), "%g" % v] for t, v in zip(times[ok], mem[ok])]})
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
    end = usage.start + (usage.steps - 1) * usage.step
    grid = ua_usage._Grid(start=usage.start, end=end, step=usage.step, steps=usage.steps, window="28d")  # pylint: disable=protected-access
    client = PrometheusClient("http://prometheus.bench")

    began = time.perf_counter()
    fast: dict = {}
    for row in client._decode_matrix(body, "/api/v1/query_range", "DCGM_FI_DEV_FB_USED{...}"):  # pylint: disable=protected-access
        ua._add_row(fast, "DCGM_FI_DEV_FB_USED", row.metric, grid.of(row.times, row.values),  # pylint: disable=protected-access
                    "exported_namespace", "exported_pod")
    fast_s = time.perf_counter() - began

    began = time.perf_counter()
    rows = json.loads(body)["data"]["result"]
    lists: dict = {}
    for row in rows:
        data = row["values"]
        arr = np.full(usage.steps, np.nan)
        ts = np.fromiter((p[0] for p in data), float, len(data))
        vs = np.array([p[1] for p in data], dtype=float)
        arr[np.rint((ts - usage.start) / usage.step).astype(np.int64)] = vs
        ua._add_row(lists, "DCGM_FI_DEV_FB_USED", row["metric"], arr, "exported_namespace", "exported_pod")  # pylint: disable=protected-access
    lists_s = time.perf_counter() - began

    assert fast.keys() == lists.keys() and all(np.array_equal(fast[k].fb_used, lists[k].fb_used, equal_nan=True)
                                               for k in fast), "the two decoders differ"
    return fast_s, lists_s, len(body)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--nodes", type=int, default=125, help="servers of 8 GPUs (125 = 1,000 GPUs)")
    ap.add_argument("--days", type=int, default=28)
    args = ap.parse_args()
    c0, t0 = time.process_time(), time.perf_counter()
    usage, variables = fleet(args.nodes, args.days)
    c1, t1 = time.process_time(), time.perf_counter()
    advice = ua.advise(usage, variables, ua.Settings(days=args.days))
    c2, t2 = time.process_time(), time.perf_counter()
    files = [render_advice.report_markdown(advice, [], "not checked"), render_advice.workloads_file(advice)]
    files += [render_advice.chart_svg(s) for s in advice["services"] if s.get("chart")]
    t3 = time.perf_counter()
    build_plan(dict(variables, gpushare_workloads=advice["proposal"]["workloads"],
                    gpushare_nodes=advice["proposal"]["nodes"]))
    t4 = time.perf_counter()
    decode_s, decode_json_s, decode_bytes = decode_one_answer(usage)
    queries = -(-args.nodes // ua.NODES_PER_QUERY) * 3
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    statuses: dict = {}
    for s in advice["services"]:
        key = "%s %s" % (s.get("status"), s.get("sharing") or "")
        statuses[key] = statuses.get(key, 0) + 1
    print(json.dumps({
        "gpus": args.nodes * 8, "days": args.days, "series": len(usage.series), "steps": usage.steps,
        "services": len(advice["services"]), "choices": statuses, "windows": len(advice["windows"]),
        "build_history_s": round(t1 - t0, 2), "advise_s": round(t2 - t1, 2), "advise_cpu_s": round(c2 - c1, 2), "render_s": round(t3 - t2, 2),
        "plan_check_s": round(t4 - t3, 2), "peak_rss_mib": round(rss_mib),
        "decode_one_answer_s": round(decode_s, 2), "decode_one_answer_mib": round(decode_bytes / 2**20, 1),
        "fetch_decode_estimate_s": round(decode_s * queries, 1), "queries": queries,
        # the same through json.loads and a list per sample (the decoder before query_range_arrays)
        "decode_one_answer_json_s": round(decode_json_s, 2),
        "fetch_decode_estimate_json_s": round(decode_json_s * queries, 1),
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
