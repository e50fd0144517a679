# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per service: its devices (a time-sliced GPU's series read as one pool) and the features
measured over a stretch of the window (presence, memory, compute, idle share, runs, the
busiest hours of the day), which the rules in ``rules.py`` decide by; the evidence and the
chart data the report shows."""

from __future__ import annotations

import datetime
import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model as inv_model
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import Settings
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import (
    GpuSeries, UsageData, _np, iso, present_mask, service_name)

HOURS_PER_DAY = 24


def compute_slices_of(card: gpu_catalog.GpuModel) -> int:
    """Compute slices of the whole card (7 on the 7-way family, 4 on A30 and RTX PRO 6000)."""
    return max((p.compute_slices for p in card.base_profiles), default=1)


def _percentile(values, q: float) -> float:
    np = _np()
    values = values[~np.isnan(values)] if len(values) else values
    return float(np.percentile(values, q)) if len(values) else float("nan")


@dataclass
class _Device:
    key: tuple
    model: str | None
    profile: str | None
    compute_fraction: float        # of a whole GPU
    unit_fraction: float           # of a whole GPU's placement grid (for quotas)
    capacity_mib: float | None
    mem: object                    # arrays: max over the device's pods (one pool)
    act: object


class _Service:
    def __init__(self, namespace: str, name: str):
        self.namespace = namespace
        self.name = name
        self.devices: dict[tuple, _Device] = {}
        self.pod_series: dict[str, list[GpuSeries]] = defaultdict(list)


class _Context:
    """What every step of the advice reads: the usage, the inventory and its lookups, the
    settings, and the hour of the day (policy time zone) of every grid point."""

    def __init__(self, usage: UsageData, inventory, settings: Settings):
        np = _np()
        self.usage = usage
        self.inventory = inventory
        self.settings = settings
        self.node_models = {n.name: n.model for n in inventory.nodes}
        self.dra_nodes = {n.name for n in inventory.nodes if n.dra}
        self.team_of_ns = {ns: t.name for t in inventory.teams for ns in t.namespaces}
        self.raw_nodes = {}     # node name -> (inventory host, its gpushare_node as written)
        zone = inv_model.time_zone(inventory.policy.timezone)
        self.hours = np.array([datetime.datetime.fromtimestamp(usage.start + i * usage.step, zone).hour
                               for i in range(usage.steps)])


# --------------------------------------------------------------------------- services and devices


def _device_info(s: GpuSeries, node_models: dict) -> tuple:
    key = s.model or node_models.get(s.node)
    card = gpu_catalog.CATALOG.get(key) if key else None
    if s.instance is None or card is None or not card.mig_capable:
        return key, 1.0, 1.0, card.memory_mib if card else None
    try:
        profile = card.profile(s.profile or "")
    except KeyError:
        return key, 1.0, 1.0, card.memory_mib
    return key, profile.compute_slices / compute_slices_of(card), profile.size / card.mig_grid, profile.memory_mib


def services_of(ctx: _Context) -> tuple[dict, list[str]]:
    """(namespace, service) -> _Service with its devices, and notes on devices seen without a pod."""
    usage = ctx.usage
    notes = []
    by_device = defaultdict(list)
    for s in usage.series:
        by_device[s.device].append(s)
    services: dict[tuple, _Service] = {}
    unattributed = set()
    for s in usage.series:
        if not s.namespace or not s.pod:
            unattributed.add("%s GPU %d%s" % (s.node, s.gpu, " MIG %s" % s.instance if s.instance else ""))
            continue
        kind, owner = usage.owners.get((s.namespace, s.pod), (None, None))
        name = service_name(kind, owner, s.pod)
        svc = services.setdefault((s.namespace, name), _Service(s.namespace, name))
        svc.pod_series[s.pod].append(s)
    for svc in services.values():
        for dev in {s.device for group in svc.pod_series.values() for s in group}:
            group = [s for s in by_device[dev] if s.namespace == svc.namespace and
                     service_name(*usage.owners.get((s.namespace, s.pod), (None, None)), s.pod or "") == svc.name]
            svc.devices[dev] = _pooled_device(ctx, dev, group)
    if unattributed:
        notes.append("devices with samples but no pod at times (idle, or not attributed by the exporter: DRA GPUs, "
                     "shared resources missing from NVIDIA_RESOURCE_NAMES; counted per node only): %s"
                     % ", ".join(sorted(unattributed)[:12]) + (" ..." if len(unattributed) > 12 else ""))
    return services, notes


def _pooled_device(ctx: _Context, dev: tuple, group: list[GpuSeries]) -> _Device:
    """One device of a service: the maximum over the series of its pods on it (one pool)."""
    np = _np()
    steps = ctx.usage.steps
    model, cfrac, ufrac, cap = _device_info(group[0], ctx.node_models)
    mem = _stack_max([s.full("fb_used", steps) for s in group], steps)
    act = _stack_max([s.full("active", steps) for s in group], steps)
    free = _stack_max([s.full("fb_free", steps) for s in group], steps)
    if cap is None and not np.isnan(free).all():
        cap = float(np.nanmax(mem + free))
    return _Device(dev, model, group[0].profile, cfrac, ufrac, cap, mem, act)


def _stack_max(arrays, steps):
    np = _np()
    arrays = [a for a in arrays if a is not None]
    if not arrays:
        return np.full(steps, np.nan)
    if len(arrays) == 1:
        return arrays[0]
    stacked = np.vstack(arrays)
    out = np.full(steps, np.nan)
    ok = ~np.isnan(stacked).all(axis=0)
    out[ok] = np.nanmax(stacked[:, ok], axis=0)
    return out


# --------------------------------------------------------------------------- features


def features(ctx: _Context, svc: _Service, sl: slice) -> dict:
    """Everything measured about one service over the steps ``sl``."""
    np = _np()
    s = ctx.settings
    devs = list(svc.devices.values())
    n = len(range(*sl.indices(ctx.usage.steps)))
    t = _totals(devs, sl)
    pods_up = _pods_up(ctx, svc, sl, n)
    present = t["present"]
    # Pods that share devices (a time-sliced GPU reported once or copied to every sharer):
    # the devices are read as one pool and the pods as its sharers.
    pooled = bool(present.any()) and float((pods_up[present] > t["devices_up"][present]).mean()) >= s.pooled_share
    if pooled:
        present = present | (pods_up > 0)     # a notebook is up while its pod is, busy or not
        replica = _per_replica_pooled(t, present, pods_up)
    else:
        replica = _per_replica(ctx, svc, sl, n, present, pods_up)
    replica_mem, replica_act = replica["mem"], replica["act"]
    mem_known = not np.isnan(replica_mem).all()
    act_known = not np.isnan(replica_act).all()
    idle = present & ((t["act_rel"] < s.idle_activity) | np.isnan(t["act_rel"]))
    active = present & (t["act_rel"] >= s.idle_activity)
    idle_mem = t["mem_total"][idle]
    models = Counter(d.model for d in devs if d.model)
    return {
        "steps": n, "present": present, "presence": float(present.mean()) if n else 0.0,
        "pooled": pooled, "replicas": replica["replicas"], "gpus_per_replica": replica["gpus_per_replica"],
        "memory_known": mem_known, "memory_peak_mib": float(np.nanmax(replica_mem)) if mem_known else float("nan"),
        "memory_p5_mib": _percentile(replica_mem, s.flat_percentile) if mem_known else float("nan"),
        "capacity_mib": min((d.capacity_mib for d in devs if d.capacity_mib), default=None),
        "compute": _percentile(replica_act, s.compute_percentile) if act_known else float("nan"),
        "compute_mean": float(np.nanmean(replica_act)) if act_known else float("nan"),
        "idle_share": float(idle.sum() / present.sum()) if present.any() else 1.0,
        "active_share": float(active.sum() / present.sum()) if present.any() else 0.0,
        "idle_memory_mib": float(np.nanmedian(idle_mem)) if idle_mem.size and not np.isnan(idle_mem).all() else 0.0,
        **_busy_hours(ctx, sl, active), **_runs(ctx, sl, present),
        "model": models.most_common(1)[0][0] if models else None,
        **_saturation(devs, sl, s),
        "mem_total": t["mem_total"], "act_total": t["act_total"], "act_rel": t["act_rel"], "pods_up": pods_up,
        "devices_up": t["devices_up"],
    }


def _totals(devs: list[_Device], sl: slice) -> dict:
    """Memory and activity summed over the service's devices (activity in whole-GPU terms and
    relative to the devices up), where any device has a sample."""
    np = _np()
    mem_stack = np.vstack([d.mem[sl] for d in devs])
    act_stack = np.vstack([d.act[sl] * d.compute_fraction for d in devs])
    cfrac = np.array([d.compute_fraction for d in devs])[:, None]
    present_stack = ~(np.isnan(mem_stack) & np.isnan(act_stack))
    present = present_stack.any(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mem_total = np.where(present, np.nansum(mem_stack, axis=0), np.nan)
        act_total = np.where(present, np.nansum(act_stack, axis=0), np.nan)
        cap = (present_stack * cfrac).sum(axis=0)
        act_rel = np.where(cap > 0, act_total / np.where(cap > 0, cap, 1), np.nan)
    return {"present": present, "mem_total": mem_total, "act_total": act_total, "act_rel": act_rel,
            "devices_up": present_stack.sum(axis=0)}


def _pods_up(ctx: _Context, svc: _Service, sl: slice, n: int):
    """Pods of the service up at once, from kube-state-metrics (else from DCGM)."""
    np = _np()
    steps = ctx.usage.steps
    running = ctx.usage.pods_running.get((svc.namespace, svc.name))
    pods_dcgm = np.zeros(n)
    for series in svc.pod_series.values():
        pods_dcgm = pods_dcgm + np.vstack([present_mask(x, steps)[sl] for x in series]).any(axis=0)
    return np.maximum(running[sl], pods_dcgm) if running is not None else pods_dcgm


def _per_replica_pooled(t: dict, present, pods_up) -> dict:
    """A pool's memory and activity shared by the pods up, one GPU each, its replicas the most
    pods up at once."""
    np = _np()
    sharers = np.where(present, np.maximum(pods_up, 1), np.nan)
    with np.errstate(invalid="ignore"):
        mem = t["mem_total"] / sharers
        act = t["act_total"] / sharers
    replicas = int(np.nanmax(np.where(present, pods_up, 0))) if present.any() else 0
    return {"mem": mem, "act": act, "gpus_per_replica": 1, "replicas": replicas}


def _per_replica(ctx: _Context, svc: _Service, sl: slice, n: int, present, pods_up) -> dict:
    """Each pod's memory and activity summed over its devices (samples of all pods in one
    array), the most devices a pod held, and the replicas as a percentile of the pods up."""
    np = _np()
    steps = ctx.usage.steps
    mems, acts, gpus = [], [], []
    for series in svc.pod_series.values():
        m = np.vstack([x.full("fb_used", steps)[sl] if x.fb_used is not None else np.full(n, np.nan)
                       for x in series])
        a = np.vstack([(x.full("active", steps)[sl] if x.active is not None else np.full(n, np.nan)) *
                       svc.devices[x.device].compute_fraction for x in series])
        p = ~(np.isnan(m) & np.isnan(a))
        up = p.any(axis=0)
        mems.append(np.where(up & ~np.isnan(m).all(axis=0), np.nansum(m, axis=0), np.nan)
                    if not np.isnan(m).all() else np.full(n, np.nan))
        acts.append(np.where(up, np.nansum(a, axis=0), np.nan))
        gpus.append(p.sum(axis=0).max() if p.size else 0)
    up_counts = pods_up[present] if present.any() else np.zeros(1)
    replicas = max(1, int(math.ceil(float(np.percentile(up_counts, ctx.settings.quota_percentile))))) \
        if present.any() else 0
    return {"mem": np.concatenate(mems), "act": np.concatenate(acts),
            "gpus_per_replica": int(max(gpus)) if gpus else 1, "replicas": replicas}


def _busy_hours(ctx: _Context, sl: slice, active) -> dict:
    """The ``busy_span_hours`` of the day (from each start hour, round the clock) holding the
    most activity, and that share of all activity (``day_concentration``)."""
    np = _np()
    span = ctx.settings.busy_span_hours
    hours = ctx.hours[sl]
    by_hour = np.bincount(hours[active], minlength=HOURS_PER_DAY).astype(float)
    total_active = by_hour.sum()
    spans = np.array([by_hour[(h + np.arange(span)) % HOURS_PER_DAY].sum() for h in range(HOURS_PER_DAY)])
    best_start = int(np.argmax(spans))
    best = float(spans[best_start] / total_active) if total_active else 0.0
    return {"day_concentration": best, "busy_from": "%02d:00" % best_start,
            "busy_until": "%02d:00" % ((best_start + span) % HOURS_PER_DAY)}


def _runs(ctx: _Context, sl: slice, present) -> dict:
    """Runs: stretches of presence, their count, median length and start hours."""
    np = _np()
    edges = np.diff(np.concatenate([[0], present.astype(int), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    run_hours = (stops - starts) * ctx.usage.step / 3600.0
    hours = ctx.hours[sl]
    return {"runs": int(len(starts)), "median_run_hours": float(np.median(run_hours)) if len(run_hours) else 0.0,
            "run_starts": [int(h) for h in hours[starts]] if len(starts) else []}


def _saturation(devs: list[_Device], sl: slice, s: Settings) -> dict:
    """A MIG slice busy at its limit hides the real need: the p95 is then only a lower bound.
    The largest share of time a slice of the service was at its limit, and that slice's share
    of a GPU."""
    np = _np()
    saturated, saturated_fraction = 0.0, None
    for d in devs:
        if d.compute_fraction < 1.0:
            up = ~np.isnan(d.act[sl])
            if up.any():
                share = float((d.act[sl][up] >= s.saturated_activity).mean())
                if share > saturated:
                    saturated, saturated_fraction = share, d.compute_fraction
    return {"saturated_share": saturated, "saturated_fraction": saturated_fraction}


# --------------------------------------------------------------------------- what the report shows


def evidence(f: dict) -> dict:
    def r(x, n=1):
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, n)
    return {"presence": r(f["presence"], 3), "idle_share": r(f["idle_share"], 3), "active_share": r(f["active_share"], 3),
            "memory_peak_mib": r(f["memory_peak_mib"], 0), "memory_p5_mib": r(f["memory_p5_mib"], 0),
            "idle_memory_mib": r(f["idle_memory_mib"], 0), "capacity_mib": r(f["capacity_mib"], 0),
            "compute_p": r(f["compute"], 3), "compute_mean": r(f["compute_mean"], 3),
            "replicas_seen": f["replicas"], "gpus_per_replica": f["gpus_per_replica"], "pooled": f["pooled"],
            "runs": f["runs"], "median_run_hours": r(f["median_run_hours"], 1),
            "busy_hours": "%s-%s" % (f["busy_from"], f["busy_until"]), "day_concentration": r(f["day_concentration"], 3),
            "model": f["model"]}


def chart_data(ctx: _Context, f: dict, sl: slice) -> dict:
    """Hourly means over the window for the service's chart (memory GiB, activity in GPUs)."""
    np = _np()
    per = max(1, 3600 // ctx.usage.step)
    n = f["steps"] // per * per

    def hourly(a):
        with np.errstate(invalid="ignore"):
            blocks = a[:n].reshape(-1, per)
            ok = ~np.isnan(blocks).all(axis=1)
            out = np.full(blocks.shape[0], np.nan)
            out[ok] = np.nanmean(blocks[ok], axis=1)
        return [None if math.isnan(v) else v for v in np.round(out, 3).tolist()]
    return {"start": iso(ctx.usage, sl.start), "hours": n // per,
            "memory_gib": hourly(f["mem_total"] / 1024.0), "gpus_active": hourly(f["act_total"])}
