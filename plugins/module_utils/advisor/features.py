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
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import SHARED_MODES
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.identity import owner_groups, service_name
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.usage import (
    GpuSeries, UsageData, _np, counts_over, iso, present_mask)

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
    """One device as one service saw it: the device's series read once for everything on it
    (dcgm-exporter gives a time-sliced device's series to one pod or copies them to every pod
    on it), and this service's share of it."""
    key: tuple
    model: str | None
    profile: str | None
    compute_fraction: float        # of a whole GPU
    unit_fraction: float           # of a whole GPU's placement grid (for quotas)
    capacity_mib: float | None
    mem: object                    # arrays over the grid: this service's share of the device's memory
    act: object                    # ... and of its activity (NaN where none of its pods is on it)
    sharers: object = None         # this service's pods on the device at each step (seen + counted)
    pods: object = None            # every service's pods on the device at each step
    # the device's activity less what the other services' pods are fitted to draw (all of it when
    # nothing else is on it): whether this service is idle
    own_act: object = None
    shared_with: tuple = ()        # other services seen on it at the same time
    reporting: str = "alone"       # alone (one pod at a time), duplicated (copied to every pod), once (one pod of several)


class _Service:
    def __init__(self, namespace: str, name: str):
        self.namespace = namespace
        self.name = name
        self.devices: dict[tuple, _Device] = {}
        # (namespace, pod) -> its series: a workload's pods may run in several namespaces
        self.pod_series: dict[tuple, list[GpuSeries]] = defaultdict(list)
        self.running = None        # pods running at each step (kube-state-metrics), or None


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
        self.identity = None    # identity.Identity: the service of each pod
        self.node_up = {}       # node -> where it reported anything (a node that is gone is not a service's absence)
        # GPUs the inventory shares by time (time-slicing or MPS, in its own mode or a window's)
        self.shareable = {(n.name, g.index) for n in inventory.nodes for g in n.gpus
                          if g.mode in SHARED_MODES or any(w.mode in SHARED_MODES for w in g.windows)}
        zone = inv_model.time_zone(inventory.policy.timezone)
        self.hours = np.array([datetime.datetime.fromtimestamp(usage.start + i * usage.step, zone).hour
                               for i in range(usage.steps)])

    def service_of(self, namespace: str, pod: str) -> tuple:
        if self.identity is None:
            kind, owner = self.usage.owners.get((namespace, pod), (None, None))
            return (namespace, service_name(kind, owner, pod))
        return self.identity.service_of(namespace, pod)


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


@dataclass
class _Pool:
    """A device read once across every service on it."""
    key: tuple
    info: tuple                    # _device_info
    profile: str | None
    mem: object
    act: object
    counts: dict                   # service key -> its pods on the device at each step
    duplicated: bool               # several pods carried the device's series at once
    shareable: bool                # the inventory time-slices it (or shares it by MPS)


def services_of(ctx: _Context) -> tuple[dict, list[str]]:
    """(namespace, service) -> _Service with its devices, and notes on devices seen without a pod.

    Each device is read once across every service on it (``_read_device``); the pods of a
    service up but not seen on any device where a time-sliced device is reported to one pod
    only are counted on it (``_hidden_sharers``); the device is then split between the services
    on it (``_split``)."""
    np = _np()
    usage = ctx.usage
    notes = []
    services: dict[tuple, _Service] = {}
    by_device = defaultdict(list)
    unattributed = set()
    for s in usage.series:
        if not s.namespace or not s.pod:
            unattributed.add("%s GPU %d%s" % (s.node, s.gpu, " MIG %s" % s.instance if s.instance else ""))
            continue
        if not present_mask(s, usage.steps).any():
            continue    # only FB_FREE: nothing says the pod was there (it would be a service without a device)
        key = ctx.service_of(s.namespace, s.pod)
        svc = services.get(key)
        if svc is None:
            svc = services[key] = _Service(*key)
        svc.pod_series[(s.namespace, s.pod)].append(s)
        by_device[s.device].append((key, s))
    groups = owner_groups(ctx.identity, usage.owners) if ctx.identity is not None else {}
    for group, counts in usage.pods_running.items():
        key = groups.get(group)
        if key is None:
            ns, kind, owner = group
            key = (ns, service_name(kind, owner, owner or ""))
        if key in services:
            svc = services[key]
            full = counts_over(counts, usage.steps)
            svc.running = (full if svc.running is None else svc.running + full).astype(np.float32)
    pools = {dev: _read_device(ctx, dev, items) for dev, items in by_device.items()}
    for key, svc in services.items():
        if svc.running is not None:
            _hidden_sharers(ctx, key, svc, pools)
    for dev, pool in pools.items():
        for key, d in _split(ctx, pool).items():
            services[key].devices[dev] = d
    if unattributed:
        notes.append("devices with samples but no pod at times (idle, or not attributed by the exporter: DRA GPUs, "
                     "shared resources missing from NVIDIA_RESOURCE_NAMES; counted per node only): %s"
                     % ", ".join(sorted(unattributed)[:12]) + (" ..." if len(unattributed) > 12 else ""))
    return services, notes


def _read_device(ctx: _Context, dev: tuple, items: list) -> _Pool:
    """The device's memory and activity (the maximum over its series: copies are equal) and
    the pods of each service on it at each step."""
    np = _np()
    steps = ctx.usage.steps
    series = [s for _key, s in items]
    info = _device_info(series[0], ctx.node_models)
    # kept as float32 (like the series): a fleet has thousands of devices
    mem = _stack_max([s.full("fb_used", steps) for s in series], steps).astype(np.float32)
    act = _stack_max([s.full("active", steps) for s in series], steps).astype(np.float32)
    if info[3] is None:
        free = _stack_max([s.full("fb_free", steps) for s in series], steps)
        if not np.isnan(free).all():
            info = info[:3] + (float(np.nanmax(mem + free)),)
    counts = {}
    for key, s in items:
        p = present_mask(s, steps).astype(np.float32)
        counts[key] = counts[key] + p if key in counts else p
    total = next(iter(counts.values())) if len(counts) == 1 else sum(counts.values())
    # Copied to every pod: several pods carry its series at once in a share of its samples (a
    # pod's series outliving it by Prometheus' lookback at a rollout is one sample, not that).
    busy = total > 0
    several = float((total[busy] >= 2).mean()) if busy.any() else 0.0
    return _Pool(key=dev, info=info, profile=series[0].profile, mem=mem, act=act, counts=counts,
                 duplicated=several >= ctx.settings.duplicated_share, shareable=(dev[0], dev[1]) in ctx.shareable)


def _hidden_sharers(ctx: _Context, key: tuple, svc: _Service, pools: dict) -> None:
    """Pods of the service running (kube-state-metrics) but carrying no series: on a
    time-sliced device reported to one pod only they are sharers the exporter does not show.
    They are counted on the service's shareable, never duplicated, devices where it is seen at
    that moment, split evenly."""
    np = _np()
    steps = ctx.usage.steps
    cands = [pools[d] for d in sorted({x.device for group in svc.pod_series.values() for x in group}, key=str)
             if pools[d].shareable and not pools[d].duplicated]
    if not cands:
        return
    seen = np.zeros(steps)
    for group in svc.pod_series.values():
        seen += np.vstack([present_mask(x, steps) for x in group]).any(axis=0)
    hidden = np.maximum(svc.running - seen, 0.0)
    if not hidden.any():
        return
    here = np.vstack([p.counts[key] > 0 for p in cands])
    n = here.sum(axis=0)
    share = np.where(n > 0, hidden / np.maximum(n, 1), 0.0)
    for p, on in zip(cands, here):
        p.counts[key] = p.counts[key] + on * share


def _split(ctx: _Context, pool: _Pool) -> dict:
    """The device shared out: each service's share of its memory (and activity) at each step
    is its pods there times a per-pod weight, over the sum for all services there. The weights
    are fitted once per device by non-negative least squares (the device's value against the
    pods of each service up at that moment); equal weights when the services are never apart.
    Whether a service is idle is read from the device's activity less the other services'
    fitted draw (``own_act``), so a busy neighbour does not make it look busy."""
    np = _np()
    keys = sorted(k for k, c in pool.counts.items() if c.any())
    model, cfrac, ufrac, cap = pool.info
    total = sum(pool.counts[k] for k in keys) if keys else np.zeros(ctx.usage.steps)
    several = float((total[total > 0] > 1 + 1e-9).mean()) if (total > 0).any() else 0.0
    reporting = "duplicated" if pool.duplicated else ("once" if several >= ctx.settings.duplicated_share else "alone")
    out = {}
    if len(keys) == 1:
        # alone on the device: its samples are the device's (NaN where none of its pods is on it)
        k = keys[0]
        out[k] = _Device(pool.key, model, pool.profile, cfrac, ufrac, cap, pool.mem, pool.act,
                         pool.counts[k], pool.counts[k] if len(pool.counts) == 1 else total, pool.act, (), reporting)
        return out
    counts = np.vstack([pool.counts[k] for k in keys])
    weights = {name: _weights(counts, arr) for name, arr in (("mem", pool.mem), ("act", pool.act))}
    together = {k: set() for k in keys}
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if i != j and ((counts[i] > 0) & (counts[j] > 0)).any():
                together[a].add(b)
    for i, k in enumerate(keys):
        on = counts[i] > 0
        parts = {}
        for name, arr in (("mem", pool.mem), ("act", pool.act)):
            w = weights[name]
            denom = (counts * w[:, None]).sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(denom > 0, counts[i] * w[i] / np.where(denom > 0, denom, 1.0), 0.0)
            parts[name] = np.where(on, arr * share, np.nan).astype(np.float32)
        others = (np.delete(counts, i, axis=0) * np.delete(weights["act"], i)[:, None]).sum(axis=0)
        own = np.where(on, np.clip(pool.act - others, 0.0, None), np.nan).astype(np.float32)
        out[k] = _Device(pool.key, model, pool.profile, cfrac, ufrac, cap, parts["mem"], parts["act"], counts[i],
                         total, own, tuple(sorted("%s/%s" % b for b in together[k])), reporting)
    return out


def _weights(counts, values):
    """Per-pod weight of each service (rows of ``counts``) fitted to ``values`` by
    non-negative least squares; equal weights when that cannot tell them apart."""
    np = _np()
    n = counts.shape[0]
    ok = ~np.isnan(values) & (counts.sum(axis=0) > 0)
    if ok.sum() < n or np.linalg.matrix_rank(counts[:, ok].T) < n:
        return np.ones(n)
    a, b = counts[:, ok].T, values[ok]
    try:
        from scipy.optimize import nnls   # the module's requirement; lstsq with clipping without it
        w = nnls(a, b)[0]
    except ImportError:
        w = np.clip(np.linalg.lstsq(a, b, rcond=None)[0], 0.0, None)
    if not (w > 0).any():
        return np.ones(n)
    return np.maximum(w, 0.01 * w.max())


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
    # Sharing is read per device: the service shares a device when more pods (its own or other
    # services', seen on it or counted on it from kube-state-metrics) are on it than the one.
    shared_at = t["pods_on"] > t["devices_up"] + 1e-9
    pooled = bool(present.any()) and float(shared_at[present].mean()) >= s.pooled_share
    observed = _observed(ctx, svc, sl, n)
    if pooled:
        present = present | (pods_up > 0)     # a notebook is up while its pod is, busy or not
        replica = _per_replica_pooled(t, present, pods_up)
    else:
        replica = _per_replica(ctx, svc, sl, n, present, pods_up, t["devices_up"])
    replica_mem, replica_act = replica["mem"], replica["act"]
    mem_known = not np.isnan(replica_mem).all()
    act_known = not np.isnan(replica_act).all()
    act_rel = t["own_act_rel"] if pooled else t["act_rel"]
    idle = present & ((act_rel < s.idle_activity) | np.isnan(act_rel))
    active = present & (act_rel >= s.idle_activity)
    up = int(present.sum())
    if pooled:
        # A time-sliced device shows only the activity of all its pods together: each sharer's
        # busy share p is estimated as if they were busy independently (the service is idle
        # when all k of its pods are: sum over its samples of (1 - p)^k = its idle samples).
        k = np.where(present, np.maximum(np.maximum(t["sharers"], pods_up), 1.0), 0.0)
        busy = _independent_busy_share(k[present], int(idle.sum()))
        idle_share, active_share = 1.0 - busy, busy
        idle_mem = replica_mem[idle]
    else:
        idle_share = float(idle.sum() / up) if up else 1.0
        active_share = float(active.sum() / up) if up else 0.0
        idle_mem = t["mem_total"][idle]
    models = Counter(d.model for d in devs if d.model)
    return {
        "steps": n, "present": present,
        "presence": min(1.0, float(present.sum()) / float(observed.sum())) if observed.any() else 0.0,
        "observed_share": float(observed.mean()) if n else 0.0,
        "pooled": pooled, "replicas": replica["replicas"], "gpus_per_replica": replica["gpus_per_replica"],
        "run_gpus": replica["run_gpus"], "pod_gpus_latest": replica["pod_gpus_latest"],
        "pod_gpus_seen": replica["pod_gpus_seen"],
        "memory_known": mem_known, "memory_peak_mib": float(np.nanmax(replica_mem)) if mem_known else float("nan"),
        "memory_p5_mib": _percentile(replica_mem, s.flat_percentile) if mem_known else float("nan"),
        "capacity_mib": min((d.capacity_mib for d in devs if d.capacity_mib), default=None),
        "compute": _percentile(replica_act, s.compute_percentile) if act_known else float("nan"),
        "compute_mean": float(np.nanmean(replica_act)) if act_known else float("nan"),
        "idle_share": idle_share, "active_share": active_share,
        "device_idle_share": float(idle.sum() / up) if up else 1.0,
        "idle_memory_mib": float(np.nanmedian(idle_mem)) if idle_mem.size and not np.isnan(idle_mem).all() else 0.0,
        **_busy_hours(ctx, sl, active), **_runs(ctx, sl, present),
        "model": models.most_common(1)[0][0] if models else None,
        **_saturation(devs, sl, s),
        "mem_total": t["mem_total"], "act_total": t["act_total"], "act_rel": act_rel, "pods_up": pods_up,
        "devices_up": t["devices_up"], "sharing": _sharing_evidence(devs, sl, s),
    }


def _independent_busy_share(k, idle_samples: int) -> float:
    """The busy share p of each of k independent sharers for which the expected idle samples
    (sum of (1 - p)^k) equal ``idle_samples``; bisection (the sum falls as p grows)."""
    np = _np()
    if not k.size:
        return 0.0
    values, weights = np.unique(np.round(k, 3), return_counts=True)
    lo, hi = 0.0, 1.0
    for _i in range(50):
        mid = (lo + hi) / 2.0
        if float((weights * (1.0 - mid) ** values).sum()) > idle_samples:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _observed(ctx: _Context, svc: _Service, sl: slice, n: int):
    """Steps at which a node of the service reported anything: a node that is gone (or whose
    exporter is) tells nothing about the service's presence."""
    np = _np()
    nodes = {d.key[0] for d in svc.devices.values()}
    out = np.zeros(n, dtype=bool)
    for node in nodes:
        up = ctx.node_up.get(node)
        if up is None:
            return np.ones(n, dtype=bool)
        out |= up[sl]
    return out if nodes else np.ones(n, dtype=bool)


def _sharing_evidence(devs: list, sl: slice, s: Settings) -> list:
    """Per device shared (several pods on it in at least ``duplicated_share`` of the
    service's samples there): how it was read (for the report)."""
    np = _np()
    out = []
    for d in devs:
        on = d.sharers[sl] > 0
        if not on.any() or float((d.pods[sl][on] > 1 + 1e-9).mean()) < s.duplicated_share:
            continue
        out.append({"device": "%s/%d%s" % (d.key[0], d.key[1], "" if d.key[2] is None else "/%s" % d.key[2]),
                    "reporting": d.reporting, "with": list(d.shared_with),
                    "pods_max": round(float(np.max(d.pods[sl][on])), 2),
                    "own_pods_max": round(float(np.max(d.sharers[sl][on])), 2)})
    return out


def _totals(devs: list[_Device], sl: slice) -> dict:
    """Memory and activity summed over the service's devices (activity in whole-GPU terms and
    relative to the devices up), where any device has a sample; the pods on those devices."""
    np = _np()
    mem_stack = np.vstack([d.mem[sl] for d in devs]).astype(float)
    act_stack = np.vstack([d.act[sl] * d.compute_fraction for d in devs]).astype(float)
    own_act_stack = np.vstack([d.own_act[sl] * d.compute_fraction for d in devs])
    cfrac = np.array([d.compute_fraction for d in devs])[:, None]
    present_stack = ~(np.isnan(mem_stack) & np.isnan(act_stack))
    present = present_stack.any(axis=0)
    pods_on = (np.vstack([d.pods[sl] for d in devs]) * present_stack).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mem_total = np.where(present, np.nansum(mem_stack, axis=0), np.nan)
        act_total = np.where(present, np.nansum(act_stack, axis=0), np.nan)
        own_act_total = np.where(present, np.nansum(own_act_stack, axis=0), np.nan)
        cap = (present_stack * cfrac).sum(axis=0)
        act_rel = np.where(cap > 0, act_total / np.where(cap > 0, cap, 1), np.nan)
        own_act_rel = np.where(cap > 0, own_act_total / np.where(cap > 0, cap, 1), np.nan)
    return {"present": present, "mem_total": mem_total, "act_total": act_total, "act_rel": act_rel,
            "own_act_rel": own_act_rel, "devices_up": present_stack.sum(axis=0), "pods_on": pods_on,
            "sharers": (np.vstack([d.sharers[sl] for d in devs]) * present_stack).sum(axis=0)}


def _pods_up(ctx: _Context, svc: _Service, sl: slice, n: int):
    """Pods of the service up at once, from kube-state-metrics (else from DCGM)."""
    np = _np()
    steps = ctx.usage.steps
    pods_dcgm = np.zeros(n)
    for series in svc.pod_series.values():
        pods_dcgm = pods_dcgm + np.vstack([present_mask(x, steps)[sl] for x in series]).any(axis=0)
    return np.maximum(svc.running[sl], pods_dcgm) if svc.running is not None else pods_dcgm


def _per_replica_pooled(t: dict, present, pods_up) -> dict:
    """A pool's memory and activity (this service's share of its devices) shared by its pods
    up, one GPU each, its replicas the most pods up at once."""
    np = _np()
    sharers = np.where(present, np.maximum(np.maximum(pods_up, t["sharers"]), 1), np.nan)
    with np.errstate(invalid="ignore"):
        mem = t["mem_total"] / sharers
        act = t["act_total"] / sharers
    replicas = int(np.nanmax(np.where(present, np.maximum(pods_up, np.round(t["sharers"])), 0))) \
        if present.any() else 0
    return {"mem": mem, "act": act, "gpus_per_replica": 1, "replicas": replicas, "run_gpus": max(1, replicas),
            "pod_gpus_latest": 1, "pod_gpus_seen": [1]}


def _per_replica(ctx: _Context, svc: _Service, sl: slice, n: int, present, pods_up, devices_up) -> dict:
    """Each pod's memory and activity summed over its devices (samples of all pods in one
    array), the most devices a pod held, and the replicas as a percentile of the pods up.
    Where a device is shared at that moment, a pod's value is its service's share of the
    device over its pods there."""
    np = _np()
    steps = ctx.usage.steps
    mems, acts, gpus, last = [], [], [], []
    for series in svc.pod_series.values():
        ms, as_ = [], []
        for x in series:
            d = svc.devices[x.device]
            m = x.full("fb_used", steps)[sl] if x.fb_used is not None else np.full(n, np.nan)
            a = x.full("active", steps)[sl] if x.active is not None else np.full(n, np.nan)
            shared = d.pods[sl] > 1 + 1e-9
            if shared.any():
                own = np.maximum(d.sharers[sl], 1.0)
                m = np.where(shared & ~np.isnan(m), d.mem[sl] / own, m)
                a = np.where(shared & ~np.isnan(a), d.act[sl] / own, a)
            ms.append(m)
            as_.append(a * d.compute_fraction)
        m, a = np.vstack(ms), np.vstack(as_)
        p = ~(np.isnan(m) & np.isnan(a))
        up = p.any(axis=0)
        mems.append(np.where(up & ~np.isnan(m).all(axis=0), np.nansum(m, axis=0), np.nan)
                    if not np.isnan(m).all() else np.full(n, np.nan))
        acts.append(np.where(up, np.nansum(a, axis=0), np.nan))
        gpus.append(p.sum(axis=0).max() if p.size else 0)
        last.append(int(np.flatnonzero(up)[-1]) if up.any() else -1)
    up_counts = pods_up[present] if present.any() else np.zeros(1)
    replicas = max(1, int(math.ceil(float(np.percentile(up_counts, ctx.settings.quota_percentile))))) \
        if present.any() else 0
    # A run's GPUs are what all its pods hold at once: a job may change shape (2 pods x 1 GPU, then
    # 1 pod x 2 GPUs) and still take the same GPUs a run. Its latest shape is that of the pod seen last.
    held = devices_up[present] if present.any() else np.zeros(1)
    run_gpus = max(1, int(math.ceil(float(np.percentile(held, ctx.settings.quota_percentile)) - 1e-9)))
    seen = [g for g, t in zip(gpus, last) if t >= 0 and g > 0]
    latest = int(gpus[int(np.argmax(last))]) if seen else 1
    return {"mem": np.concatenate(mems), "act": np.concatenate(acts),
            "gpus_per_replica": int(max(gpus)) if gpus else 1, "replicas": replicas,
            "run_gpus": run_gpus, "pod_gpus_latest": max(1, latest),
            "pod_gpus_seen": sorted({int(g) for g in seen}) or [1]}


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
            "gpus_at_once": f["run_gpus"], "gpus_per_pod_seen": f["pod_gpus_seen"],
            "runs": f["runs"], "median_run_hours": r(f["median_run_hours"], 1),
            "busy_hours": "%s-%s" % (f["busy_from"], f["busy_until"]), "day_concentration": r(f["day_concentration"], 3),
            "model": f["model"], "device_idle_share": r(f["device_idle_share"], 3),
            "observed_share": r(f["observed_share"], 3), "sharing": f["sharing"]}


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
