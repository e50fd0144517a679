# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage advisor: weeks of dcgm-exporter and kube-state-metrics history in, a proposed
split (``gpushare_workloads`` and per-GPU modes) with its evidence out.

Pure Python with numpy (no Ansible import). Two halves:

* ``fetch_usage`` reads the history from Prometheus (``prometheus_client``) into
  ``UsageData``: one ``GpuSeries`` per (GPU or MIG instance, pod), aligned on one time grid.
* ``advise`` turns ``UsageData`` and the current inventory into the advice: per service the
  evidence (memory needed, compute needed, kind detected from the pattern) and the choice
  (whole GPU, the smallest MIG profile that holds memory and compute, time-slicing with
  replicas from memory, or DRA); per team quotas from concurrent use and sharing windows
  from idle hours; what to buy; and a proposal that ``plan.yml`` accepts.

What the data means (dcgm-exporter 4.x, GPU Operator v26.3.3; see docs/advisor.md):
``DCGM_FI_DEV_FB_USED`` is MiB and is missing for MIG instances on some setups;
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` is 0..1 and, on a MIG instance, relative to that instance;
``DCGM_FI_DEV_GPU_UTIL`` (percent) is never reported for MIG instances; a time-sliced GPU's
values are given to one pod or copied to every sharer, so it is read as one pool.
"""

from __future__ import annotations

import datetime
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog, mig_geometry
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model as inv_model
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import AUTO, DRA, MIG, SHARED_MODES, TIMESLICE, WHOLE

ADVICE_FORMAT = "gpushare.cluster/advice-v1"
MIB_PER_GIB = 1024


class AdviceError(Exception):
    """The advice cannot be given (no data, missing metrics, too little history); the
    message names what is missing and what to do."""


@dataclass(frozen=True)
class Settings:
    days: int = 28                    # history read, ending at `end`
    min_days: int = 14                # less history than this: not enough data, no proposal
    step: int = 300                   # seconds between samples
    memory_headroom: float = 0.2      # memory needed = peak x (1 + headroom)
    compute_percentile: float = 95.0  # compute needed = this percentile of activity (whole-GPU terms)
    quota_percentile: float = 90.0    # team quota = this percentile of GPUs in use at once
    idle_activity: float = 0.05       # below this activity (of the device) a sample is idle
    max_gap: float = 0.1              # a node with more of its samples missing is not enough data
    min_window_hours: int = 6         # shortest sharing window proposed from idle hours
    reservation_share: float = 0.6    # flat memory above this share of the device: a framework's reservation
    stability: bool = True            # the choice must hold in both halves of the window


# --------------------------------------------------------------------------- data


@dataclass
class GpuSeries:
    """One device (a whole GPU or a MIG instance) as seen for one pod (or no pod)."""
    node: str
    gpu: int
    uuid: str
    instance: str | None           # GPU_I_ID on MIG instances
    profile: str | None            # GPU_I_PROFILE on MIG instances
    model: str | None              # catalogue key from modelName
    namespace: str | None
    pod: str | None
    fb_used: object = None         # numpy arrays over the grid from `offset` (NaN = no sample)
    fb_free: object = None
    active: object = None          # 0..1 relative to the device
    offset: int = 0                # grid index of the arrays' first element

    def full(self, name: str, steps: int):
        """The metric ``name`` over the whole grid (float64, NaN where absent), or None."""
        np = _np()
        arr = getattr(self, name)
        if arr is None:
            return None
        if self.offset == 0 and len(arr) == steps and arr.dtype == np.float64:
            return arr
        out = np.full(steps, np.nan)
        out[self.offset:self.offset + len(arr)] = arr
        return out

    def compact(self) -> "GpuSeries":
        """Keep only the stretch from the first to the last sample, as float32: a Job's pod
        holds its GPU a few hours of 28 days, and a fleet has thousands of such series."""
        np = _np()
        arrays = [a for a in (self.fb_used, self.fb_free, self.active) if a is not None]
        if not arrays:
            return self
        present = np.zeros(len(arrays[0]), dtype=bool)
        for a in arrays:
            present |= ~np.isnan(a)
        idx = np.flatnonzero(present)
        lo, hi = (int(idx[0]), int(idx[-1]) + 1) if idx.size else (0, 0)
        for name in ("fb_used", "fb_free", "active"):
            a = getattr(self, name)
            if a is not None:
                setattr(self, name, a[lo:hi].astype(np.float32))
        self.offset += lo
        return self

    @property
    def device(self) -> tuple:
        return (self.node, self.gpu, self.instance)


@dataclass
class UsageData:
    start: float                   # epoch seconds of the first grid point
    step: int
    steps: int
    series: list[GpuSeries]
    owners: dict                   # (namespace, pod) -> (owner_kind, owner_name)
    pods_running: dict = field(default_factory=dict)   # (namespace, service) -> array of pod counts
    source: str = ""
    notes: list = field(default_factory=list)


def _np():
    import numpy   # lazily: ansible-test's import sanity test runs without numpy
    return numpy


# --------------------------------------------------------------------------- fetching

METRIC_MEMORY = "DCGM_FI_DEV_FB_USED"
METRIC_FREE = "DCGM_FI_DEV_FB_FREE"
METRIC_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
METRIC_UTIL = "DCGM_FI_DEV_GPU_UTIL"
METRIC_OWNER = "kube_pod_owner"
_REPLICASET_HASH = re.compile(r"-[a-z0-9]{6,10}$")
# A Job per run: CronJob's "-<minutes since the epoch>", or a run id that tools append
# ("-3fa8b2c1"); a last segment of 5-12 letters and digits with at least one digit.
_JOB_SUFFIX = re.compile(r"-(?=[a-z0-9]*[0-9])[a-z0-9]{5,12}$")


def service_name(owner_kind: str | None, owner_name: str | None, pod: str) -> str:
    """The service a pod belongs to: its Deployment (ReplicaSet name without the
    pod-template-hash), StatefulSet, DaemonSet or Job (runs lose their run suffix)."""
    if not owner_name or owner_kind in (None, "", "<none>"):
        return _REPLICASET_HASH.sub("", _REPLICASET_HASH.sub("", pod)) if pod.count("-") >= 2 else pod
    if owner_kind == "ReplicaSet":
        return _REPLICASET_HASH.sub("", owner_name)
    if owner_kind == "Job":
        return _JOB_SUFFIX.sub("", owner_name)
    return owner_name


NODES_PER_QUERY = 8


def _add_row(series: dict, metric: str, row: dict, values, ns_label: str, pod_label: str) -> None:
    labels = row["metric"]
    node = labels.get("Hostname") or labels.get("hostname") or labels.get("instance", "?").split(":")[0]
    try:
        gpu = int(labels.get("gpu", "0"))
    except ValueError:
        gpu = 0
    instance = labels.get("GPU_I_ID") or None
    key = (inv_model.node_name(node), gpu, instance, labels.get(ns_label), labels.get(pod_label))
    s = series.get(key)
    if s is None:
        found = gpu_catalog.lookup(labels.get("modelName", "")) if labels.get("modelName") else None
        s = series[key] = GpuSeries(node=key[0], gpu=gpu, uuid=labels.get("UUID", ""), instance=instance,
                                    profile=labels.get("GPU_I_PROFILE") or None,
                                    model=found.key if found else None, namespace=key[3], pod=key[4])
    if metric == METRIC_MEMORY:
        s.fb_used = values
    elif metric == METRIC_FREE:
        s.fb_free = values
    elif metric == METRIC_ACTIVE:
        s.active = values
    elif metric == METRIC_UTIL and s.active is None and instance is None:
        s.active = values / 100.0     # percent; only where GR_ENGINE_ACTIVE is missing


def fetch_usage(client, end: float, settings: Settings) -> UsageData:
    """Read ``settings.days`` of history ending at ``end`` from Prometheus.

    Raises AdviceError naming the metric that is missing (no data at all, or no pod
    attribution), PrometheusError for transport problems (unreachable, TLS, auth).
    """
    np = _np()
    step = settings.step
    start = end - settings.days * 86400
    start = start - start % step
    steps = int((end - start) // step) + 1
    window = "%dd" % settings.days

    def present(metric: str) -> int:
        rows = client.query("count(last_over_time(%s[%s]))" % (metric, window), end)
        return int(float(rows[0]["value"][1])) if rows else 0

    if present(METRIC_MEMORY) == 0 and present(METRIC_ACTIVE) == 0 and present(METRIC_UTIL) == 0:
        raise AdviceError(
            "%s has no dcgm-exporter series (%s, %s, %s) in the last %d days: is dcgm-exporter scraped by this "
            "Prometheus (ServiceMonitor of the GPU Operator, label release of the Prometheus operator) and is the "
            "retention at least %d days?"
            % (client.url, METRIC_MEMORY, METRIC_ACTIVE, METRIC_UTIL, settings.days, settings.days))
    have_active = present(METRIC_ACTIVE) > 0
    have_util = present(METRIC_UTIL) > 0
    if not have_active and not have_util:
        raise AdviceError("%s has %s but neither %s nor %s in the last %d days: without activity no compute "
                          "need can be measured; enable the DCP metrics in dcgm-exporter's metrics CSV "
                          "(dcp-metrics-included.csv)"
                          % (client.url, METRIC_MEMORY, METRIC_ACTIVE, METRIC_UTIL, settings.days))
    if present(METRIC_OWNER) == 0:
        raise AdviceError("%s has no %s series in the last %d days: kube-state-metrics tells which Deployment, "
                          "StatefulSet or Job a pod belongs to; scrape kube-state-metrics (kube-prometheus-stack "
                          "does) and run the advisor again" % (client.url, METRIC_OWNER, settings.days))

    def grid(values) -> object:
        arr = np.full(steps, np.nan)
        if values:
            data = np.asarray(values, dtype=float)
            idx = np.rint((data[:, 0] - start) / step).astype(np.int64)
            ok = (idx >= 0) & (idx < steps)
            arr[idx[ok]] = data[ok, 1]
        return arr

    metrics = (METRIC_MEMORY, METRIC_FREE) + ((METRIC_ACTIVE,) if have_active else ()) + \
        ((METRIC_UTIL,) if have_util else ())
    any_metric = METRIC_ACTIVE if have_active else METRIC_UTIL
    # honorLabels false (the chart's default) moves the pod's labels to exported_*
    exported = bool(client.query('count(last_over_time(%s{exported_namespace!=""}[%s]))' % (any_metric, window), end))
    ns_label, pod_label = ("exported_namespace", "exported_pod") if exported else ("namespace", "pod")
    # Nodes are read a few at a time: one answer for a whole fleet would not fit in memory
    # (28 days of 1,000 GPUs is about 8 million samples per metric).
    hosts = []
    for row in client.query("count by (Hostname, hostname) (last_over_time(%s[%s]))" % (any_metric, window), end):
        for label in ("Hostname", "hostname"):
            if row["metric"].get(label):
                hosts.append((label, row["metric"][label]))
    selectors = []
    for label in ("Hostname", "hostname"):
        names = sorted({h for lab, h in hosts if lab == label})
        for i in range(0, len(names), NODES_PER_QUERY):
            selectors.append('%s=~"%s"' % (label, "|".join(re.sub(r"([.\\^$*+?()\[\]{}|])", r"\\\\\1", n)
                                                           for n in names[i:i + NODES_PER_QUERY])))
    if not hosts:
        selectors = [""]
    series: dict[tuple, GpuSeries] = {}
    for selector in selectors:
        for metric in metrics:
            for row in client.query_range("%s{%s}" % (metric, selector), start, end, step):
                _add_row(series, metric, row, grid(row["values"]), ns_label, pod_label)
        for s in series.values():
            if s.offset == 0 and s.fb_used is not None and len(s.fb_used) == steps or \
                    s.offset == 0 and s.active is not None and len(s.active) == steps:
                s.compact()
    if not any(s.namespace for s in series.values()):
        raise AdviceError("the dcgm-exporter series at %s carry no namespace or exported_namespace label: the "
                          "exporter does not attribute GPUs to pods. Its kubelet pod-resources mount must be on and "
                          "shared resources must be listed in NVIDIA_RESOURCE_NAMES (the monitoring role sets it "
                          "from the plan)" % client.url)
    owners = {}
    rows = client.query("max by (namespace, pod, owner_kind, owner_name) (max_over_time(%s[%s]))"
                        % (METRIC_OWNER, window), end)
    for row in rows:
        labels = row["metric"]
        owners[(labels.get("namespace"), labels.get("pod"))] = (labels.get("owner_kind"), labels.get("owner_name"))
    counts = defaultdict(lambda: np.zeros(steps))
    namespaces = sorted({ns for ns, _pod in owners if ns})
    for ns in namespaces:              # a namespace at a time, for the same reason as the nodes
        for row in client.query_range('count by (namespace, owner_kind, owner_name) (%s{namespace="%s"})'
                                      % (METRIC_OWNER, ns), start, end, step):
            labels = row["metric"]
            name = service_name(labels.get("owner_kind"), labels.get("owner_name"), labels.get("owner_name") or "")
            counts[(labels.get("namespace"), name)] += np.nan_to_num(grid(row["values"]))
    return UsageData(start=start, step=step, steps=steps, series=list(series.values()), owners=owners,
                     pods_running=dict(counts), source=client.url,
                     notes=["pod labels read from %s/%s" % (ns_label, pod_label)])


# --------------------------------------------------------------------------- pure choices


def compute_slices_of(card: gpu_catalog.GpuModel) -> int:
    """Compute slices of the whole card (7 on the 7-way family, 4 on A30 and RTX PRO 6000)."""
    return max((p.compute_slices for p in card.base_profiles), default=1)


def choose_profile(card: gpu_catalog.GpuModel, memory_mib: float, compute: float) -> gpu_catalog.MigProfile | None:
    """The smallest base MIG profile of ``card`` that holds ``memory_mib`` and ``compute``
    (whole-GPU terms, 0..1): fewest placement units, then fewest compute slices, then least
    memory. None when no profile holds both (or the card has no MIG)."""
    if not card.mig_capable:
        return None
    slices = compute_slices_of(card)
    fitting = [p for p in card.base_profiles
               if p.memory_mib >= memory_mib and p.compute_slices / slices >= compute - 1e-9]
    return min(fitting, key=lambda p: (p.size, p.compute_slices, p.memory_mib, p.name), default=None)


def _percentile(values, q: float) -> float:
    np = _np()
    values = values[~np.isnan(values)] if len(values) else values
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _circular_runs(flags: list[bool]) -> list[tuple[int, int]]:
    """Runs of True in a circular list as (start, length), longest first."""
    n = len(flags)
    if all(flags):
        return [(0, n)]
    runs = []
    first_false = flags.index(False)
    i = first_false + 1
    while i < first_false + 1 + n:
        if flags[i % n]:
            j = i
            while flags[j % n] and j < i + n:
                j += 1
            runs.append((i % n, j - i))
            i = j
        else:
            i += 1
    return sorted(runs, key=lambda r: (-r[1], r[0]))


def detect_kind(f: dict) -> tuple[str, str]:
    """The kind of a service from the features of its pattern, and why.

    notebook: mostly idle, holds memory while idle, its bursts within working hours (its pod
    may be gone at night); serving: always up; training/batch: runs, then releases the GPU,
    busy while it runs (long runs or several GPUs: training).
    """
    if (f["idle_share"] >= 0.5 and f["idle_memory_mib"] >= 512 and f["active_share"] >= 0.02
            and f["day_concentration"] >= 0.9):
        return "notebook", ("idle %.0f %% of its time holding %.1f GiB, %.0f %% of its activity within %s-%s"
                            % (100 * f["idle_share"], f["idle_memory_mib"] / 1024.0,
                               100 * f["day_concentration"], f["busy_from"], f["busy_until"]))
    if f["presence"] >= 0.9:
        return "serving", ("always up (%.0f %% of the time), active %.0f %% of it"
                           % (100 * f["presence"], 100 * f["active_share"]))
    long_runs = f["median_run_hours"] >= 2 or f["gpus_per_replica"] > 1
    kind = "training" if long_runs else "batch"
    return kind, ("up %.0f %% of the time in %d runs (median %.1f h), active %.0f %% while up: runs, then releases "
                  "the GPU" % (100 * f["presence"], f["runs"], f["median_run_hours"], 100 * f["active_share"]))


# --------------------------------------------------------------------------- per service


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


class _Context:
    def __init__(self, usage: UsageData, inventory, settings: Settings):
        np = _np()
        self.usage = usage
        self.inventory = inventory
        self.settings = settings
        self.node_models = {n.name: n.model for n in inventory.nodes}
        self.gpu_specs = {(n.name, g.index): g for n in inventory.nodes for g in n.gpus}
        self.dra_nodes = {n.name for n in inventory.nodes if n.dra}
        self.team_of_ns = {ns: t.name for t in inventory.teams for ns in t.namespaces}
        self.raw_nodes = {}     # node name -> (inventory host, its gpushare_node as written)
        zone = inv_model.time_zone(inventory.policy.timezone)
        self.hours = np.array([datetime.datetime.fromtimestamp(usage.start + i * usage.step, zone).hour
                               for i in range(usage.steps)])
        self.days_index = np.array([int((i * usage.step) // 86400) for i in range(usage.steps)])


def _present(s: GpuSeries, steps: int):
    np = _np()
    p = np.zeros(steps, dtype=bool)
    for name in ("fb_used", "active"):
        arr = getattr(s, name)
        if arr is not None:
            p[s.offset:s.offset + len(arr)] |= ~np.isnan(arr)
    return p


def _services(ctx: _Context) -> tuple[dict, list[str]]:
    np = _np()
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
            model, cfrac, ufrac, cap = _device_info(group[0], ctx.node_models)
            mem = _stack_max([s.full("fb_used", usage.steps) for s in group], usage.steps)
            act = _stack_max([s.full("active", usage.steps) for s in group], usage.steps)
            free = _stack_max([s.full("fb_free", usage.steps) for s in group], usage.steps)
            if cap is None and not np.isnan(free).all():
                cap = float(np.nanmax(mem + free))
            svc.devices[dev] = _Device(dev, model, group[0].profile, cfrac, ufrac, cap, mem, act)
    if unattributed:
        notes.append("devices with samples but no pod at times (idle, or not attributed by the exporter: DRA GPUs, "
                     "shared resources missing from NVIDIA_RESOURCE_NAMES; counted per node only): %s"
                     % ", ".join(sorted(unattributed)[:12]) + (" ..." if len(unattributed) > 12 else ""))
    return services, notes


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


def _features(ctx: _Context, svc: _Service, sl: slice) -> dict:
    """Everything measured about one service over the steps ``sl``."""
    np = _np()
    s = ctx.settings
    devs = list(svc.devices.values())
    steps = ctx.usage.steps
    n = len(range(*sl.indices(steps)))
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
    # replicas: pods of the service up at once, from kube-state-metrics (else from DCGM)
    running = ctx.usage.pods_running.get((svc.namespace, svc.name))
    pods_dcgm = np.zeros(n)
    for series in svc.pod_series.values():
        pods_dcgm = pods_dcgm + np.vstack([_present(x, steps)[sl] for x in series]).any(axis=0)
    pods_up = np.maximum(running[sl], pods_dcgm) if running is not None else pods_dcgm
    devices_up = present_stack.sum(axis=0)
    # Pods that share devices (a time-sliced GPU reported once or copied to every sharer):
    # the devices are read as one pool and the pods as its sharers.
    pooled = bool(present.any()) and float((pods_up[present] > devices_up[present]).mean()) >= 0.5
    if pooled:
        present = present | (pods_up > 0)     # a notebook is up while its pod is, busy or not
    # per replica memory, compute and GPUs
    if pooled:
        sharers = np.where(present, np.maximum(pods_up, 1), np.nan)
        with np.errstate(invalid="ignore"):
            replica_mem = mem_total / sharers
            replica_act = act_total / sharers
        gpus_per_replica = 1
        replicas = int(np.nanmax(np.where(present, pods_up, 0))) if present.any() else 0
    else:
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
        replica_mem = np.concatenate(mems)
        replica_act = np.concatenate(acts)
        gpus_per_replica = int(max(gpus)) if gpus else 1
        up_counts = pods_up[present] if present.any() else np.zeros(1)
        replicas = max(1, int(math.ceil(float(np.percentile(up_counts, s.quota_percentile))))) if present.any() else 0
    mem_known = not np.isnan(replica_mem).all()
    peak = float(np.nanmax(replica_mem)) if mem_known else float("nan")
    low = _percentile(replica_mem, 5) if mem_known else float("nan")
    capacity = min((d.capacity_mib for d in devs if d.capacity_mib), default=None)
    # runs: stretches of presence
    edges = np.diff(np.concatenate([[0], present.astype(int), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    run_hours = (stops - starts) * ctx.usage.step / 3600.0
    idle = present & ((act_rel < s.idle_activity) | np.isnan(act_rel))
    active = present & (act_rel >= s.idle_activity)
    hours = ctx.hours[sl]
    by_hour = np.bincount(hours[active], minlength=24).astype(float)
    total_active = by_hour.sum()
    # the 12 hours of the day (from each start hour, round the clock) holding most activity
    spans = np.array([by_hour[(h + np.arange(12)) % 24].sum() for h in range(24)])
    best_start = int(np.argmax(spans))
    best = float(spans[best_start] / total_active) if total_active else 0.0
    idle_mem = mem_total[idle]
    # A MIG slice busy at its limit hides the real need: the p95 is then only a lower bound.
    saturated, saturated_fraction = 0.0, None
    for d in devs:
        if d.compute_fraction < 1.0:
            up = ~np.isnan(d.act[sl])
            if up.any():
                share = float((d.act[sl][up] >= 0.95).mean())
                if share > saturated:
                    saturated, saturated_fraction = share, d.compute_fraction
    models = Counter(d.model for d in devs if d.model)
    return {
        "steps": n, "present": present, "presence": float(present.mean()) if n else 0.0,
        "pooled": pooled, "replicas": replicas, "gpus_per_replica": gpus_per_replica,
        "memory_known": mem_known, "memory_peak_mib": peak, "memory_p5_mib": low,
        "capacity_mib": capacity,
        "compute": _percentile(replica_act, s.compute_percentile) if not np.isnan(replica_act).all() else float("nan"),
        "compute_mean": float(np.nanmean(replica_act)) if not np.isnan(replica_act).all() else float("nan"),
        "idle_share": float(idle.sum() / present.sum()) if present.any() else 1.0,
        "active_share": float(active.sum() / present.sum()) if present.any() else 0.0,
        "idle_memory_mib": float(np.nanmedian(idle_mem)) if idle_mem.size and not np.isnan(idle_mem).all() else 0.0,
        "day_concentration": best, "busy_from": "%02d:00" % best_start, "busy_until": "%02d:00" % ((best_start + 12) % 24),
        "runs": int(len(starts)), "median_run_hours": float(np.median(run_hours)) if len(run_hours) else 0.0,
        "run_starts": [int(h) for h in hours[starts]] if len(starts) else [],
        "model": models.most_common(1)[0][0] if models else None,
        "saturated_share": saturated, "saturated_fraction": saturated_fraction,
        "mem_total": mem_total, "act_total": act_total, "act_rel": act_rel, "pods_up": pods_up,
        "devices_up": devices_up,
    }


def _choice(ctx: _Context, svc: _Service, f: dict, kind: str) -> dict:
    """What to give the service: sharing, profile, GPUs, replicas, memory; and why."""
    s = ctx.settings
    card = gpu_catalog.CATALOG.get(f["model"]) if f["model"] else None
    on_dra = any(d.key[0] in ctx.dra_nodes for d in svc.devices.values())
    peak, capacity = f["memory_peak_mib"], f["capacity_mib"]
    reservation = (f["memory_known"] and capacity and not f["pooled"] and peak >= s.reservation_share * capacity
                   and f["memory_p5_mib"] >= 0.97 * peak)
    memory_note = ""
    if not f["memory_known"]:
        profiles = {d.profile for d in svc.devices.values() if d.profile}
        caps = [d.capacity_mib for d in svc.devices.values() if d.capacity_mib]
        if not caps or not profiles:
            return {"status": "not_enough_data",
                    "reason": "%s has no %s samples: its memory need is unknown" % (svc.name, METRIC_MEMORY)}
        need = float(max(caps))
        memory_note = ("%s is not reported for its MIG instance (%s); its need is at most the %d MiB of the slice "
                       "it ran in" % (METRIC_MEMORY, ", ".join(sorted(profiles)), need))
    elif reservation:
        need = peak
        memory_note = ("flat at %.1f GiB, %.0f %% of the device: a framework's reservation (e.g. vLLM's "
                       "gpu-memory-utilization), not a measured need" % (peak / 1024.0, 100 * peak / capacity))
    else:
        need = peak * (1 + s.memory_headroom)
        memory_note = "peak %.1f GiB + %.0f %% headroom" % (peak / 1024.0, 100 * s.memory_headroom)
    compute = f["compute"] if not math.isnan(f["compute"]) else 0.0
    compute_note = "p%g of activity %.2f of a GPU" % (s.compute_percentile, compute)
    if f["saturated_share"] >= 0.05 and f["saturated_fraction"]:
        compute = max(compute, f["saturated_fraction"] * 1.01)
        compute_note = ("its MIG slice (%.2f of a GPU) was busy at its limit %.0f %% of the time, so the measured "
                        "activity is a lower bound: the next larger compute is proposed"
                        % (f["saturated_fraction"], 100 * f["saturated_share"]))
    memory_gib = _gib_up(need)
    out = {"status": "ok", "memory_need_mib": int(math.ceil(need)), "memory_note": memory_note,
           "compute_note": compute_note,
           "reservation": bool(reservation), "compute_need": round(compute, 4), "memory_gib": memory_gib,
           "replicas": max(1, f["replicas"]), "gpus": 1, "mig_profile": None, "model": card.key if card else None}
    if kind == "notebook" or (f["pooled"] and kind != "serving"):
        usable = card.memory_mib if card else need
        sharers = max(2, f["replicas"])
        pool_gpus = max(1, int(math.ceil(sharers * need / usable)))
        why = ("%d sharers of %.1f GiB each fit %d %s card%s; time-slicing (each of k sharers gets 1/k of the card, "
               "about 7 %% lost to switching)" % (sharers, need / 1024.0, pool_gpus, card.key if card else "GPU",
                                                  "" if pool_gpus == 1 else "s"))
        out.update(sharing=TIMESLICE, replicas=sharers, pool_gpus=pool_gpus,
                   gpu_replicas=min(64, max(2, int(math.ceil(sharers / pool_gpus)))), why=why)
        return out
    if kind in ("training", "batch"):
        per_gpu = card.memory_mib if card else need
        gpus = max(f["gpus_per_replica"], int(math.ceil(need / per_gpu)) if per_gpu else 1)
        out.update(sharing=WHOLE, gpus=gpus, memory_gib=min(memory_gib, int(gpus * per_gpu / 1024)) or memory_gib,
                   why="%s runs then releases: %d whole GPU%s per run, queued in the team's Kueue queue "
                       "(borrows idle GPUs of the cohort)" % (kind, gpus, "" if gpus == 1 else "s"))
        return out
    if on_dra:
        out.update(sharing=DRA, why="runs on a DRA server: a device request for at least %d GiB" % memory_gib)
        return out
    if card is not None and card.mig_capable and f["gpus_per_replica"] == 1:
        profile = choose_profile(card, need, compute)
        if profile is not None and profile.size < card.mig_grid:
            out.update(sharing=MIG, mig_profile=profile.name,
                       memory_gib=min(memory_gib, math.floor(profile.memory_mib / MIB_PER_GIB * 100) / 100.0),
                       why="%s holds %.1f GiB (needs %.1f) and %d/%d of the compute (needs %.2f of a GPU)"
                           % (profile.name, profile.memory_mib / 1024.0, need / 1024.0, profile.compute_slices,
                              compute_slices_of(card), compute))
            return out
        reason = ("needs %.1f GiB and %.2f of a GPU: no MIG slice smaller than the whole card holds both"
                  % (need / 1024.0, compute))
    elif card is not None and not card.mig_capable:
        reason = "%s has no MIG: a whole card" % card.key
    else:
        reason = "%d GPUs per replica" % f["gpus_per_replica"]
    per_gpu = card.memory_mib if card else need
    gpus = max(f["gpus_per_replica"], int(math.ceil(need / per_gpu)) if per_gpu else 1)
    out.update(sharing=WHOLE, gpus=gpus, why=reason)
    return out


def _gib_up(mib: float) -> float:
    """MiB to GiB rounded up to a half GiB (at least 0.5), as the inventory writes it."""
    half = max(1, int(math.ceil(mib / 512.0 - 1e-9)))
    return half // 2 if half % 2 == 0 else half / 2.0


def _signature(c: dict) -> tuple:
    return (c.get("status"), c.get("sharing"), c.get("mig_profile"), c.get("gpus"), c.get("pool_gpus"))


# --------------------------------------------------------------------------- advise


def advise(usage: UsageData, variables: dict, settings: Settings = Settings()) -> dict:
    """The advice for ``usage`` and the inventory ``variables`` (as the plan module takes them).

    Raises AdviceError when there is nothing to advise from (no series, too little history).
    """
    np = _np()
    try:
        inventory = inv_model.load_inventory(variables)
    except PlanInvalid as invalid:
        raise AdviceError("the current inventory is invalid, fix it first (plan.yml shows the same):\n%s"
                          % invalid) from None
    if not usage.series:
        raise AdviceError("no GPU series in %s: nothing to advise from" % (usage.source or "the data"))
    ctx = _Context(usage, inventory, settings)
    ctx.raw_nodes = {inv_model.node_name(str(h)): (str(h), v) for h, v in (variables.get("gpushare_nodes") or {}).items()}
    any_present = np.zeros(usage.steps, dtype=bool)
    node_present = defaultdict(lambda: np.zeros(usage.steps, dtype=bool))
    for s in usage.series:
        p = _present(s, usage.steps)
        any_present |= p
        node_present[s.node] |= p
    if not any_present.any():
        raise AdviceError("the GPU series in %s hold no samples: nothing to advise from" % (usage.source or "the data"))
    first, last = int(np.flatnonzero(any_present)[0]), int(np.flatnonzero(any_present)[-1])
    span_days = (last - first + 1) * usage.step / 86400.0
    if span_days + 1 / 24.0 < settings.min_days:     # an hour of slack: scrapes start late
        raise AdviceError("not enough data: %s holds %.1f days of GPU history (%s to %s), the advisor needs at "
                          "least %d (min_days); wait, or lower min_days knowingly"
                          % (usage.source or "the data", span_days, _iso(usage, first), _iso(usage, last),
                             settings.min_days))
    window = slice(first, last + 1)
    gaps = {}
    for node, p in node_present.items():
        missing = 1.0 - float(p[window].mean())
        if missing > settings.max_gap:
            gaps[node] = missing
    services, notes = _services(ctx)
    notes = list(usage.notes) + notes
    half = first + (last + 1 - first) // 2
    halves = (slice(first, half), slice(half, last + 1))
    declared = {w.name: w for w in inventory.workloads}
    results = []
    for (ns, name), svc in sorted(services.items()):
        team = ctx.team_of_ns.get(ns)
        entry = {"name": name, "namespace": ns, "team": team, "declared": _declared(declared.get(name))}
        if team is None:
            entry.update(status="unknown_namespace", reason="namespace %s belongs to no team of gpushare_teams" % ns)
            results.append(entry)
            continue
        if declared.get(name) is not None and declared[name].team != team:
            notes.append("service %s runs in namespace %s (team %s) but the inventory gives it to team %s"
                         % (name, ns, team, declared[name].team))
        f = _features(ctx, svc, window)
        entry["evidence"] = _evidence(f)
        entry["chart"] = _chart_data(ctx, f, window)
        gap_nodes = sorted({d.key[0] for d in svc.devices.values()} & set(gaps))
        observed_days = f["present"].sum() * usage.step / 86400.0
        span = np.flatnonzero(f["present"])
        service_span = (span[-1] - span[0] + 1) * usage.step / 86400.0 if span.size else 0.0
        if gap_nodes:
            entry.update(status="not_enough_data", reason="samples missing on %s (%s); the advisor allows %.0f %%"
                         % (", ".join(gap_nodes), ", ".join("%.0f %%" % (100 * gaps[n]) for n in gap_nodes),
                            100 * settings.max_gap))
        elif service_span + 1 / 24.0 < settings.min_days:
            entry.update(status="not_enough_data", reason="seen over %.1f days (%.1f days of samples); needs %d"
                         % (service_span, observed_days, settings.min_days))
        else:
            kind, why = detect_kind(f)
            choice = _choice(ctx, svc, f, kind)
            entry.update(kind=kind, kind_why=why)
            entry.update(choice)
            if choice.get("sharing") == TIMESLICE:
                entry["idle_hours"] = _idle_hours(ctx, f, window)
            if choice["status"] == "ok" and settings.stability:
                sig = []
                for h in halves:
                    fh = _features(ctx, svc, h)
                    kh = detect_kind(fh)[0] if fh["present"].any() else "absent"
                    sig.append((kh,) + _signature(_choice(ctx, svc, fh, kh)) if fh["present"].any() else ("absent",))
                entry["halves"] = [" ".join(str(x) for x in s_ if x is not None) for s_ in sig]
                if sig[0] != sig[1]:
                    entry.update(status="unstable", reason="the choice differs between the two halves of the window "
                                 "(%s / %s): the current entry is kept" % tuple(entry["halves"]))
        results.append(entry)
    seen = {r["name"] for r in results}
    for w in inventory.workloads:
        if w.name not in seen:
            results.append({"name": w.name, "team": w.team, "namespace": None, "declared": _declared(w),
                            "status": "no_data", "reason": "not seen in the GPU metrics: the current entry is kept"})
    teams = _team_quotas(ctx, services, window)
    proposal = _propose(ctx, results, teams, services, window)
    return {"format": ADVICE_FORMAT, "source": usage.source,
            "window": {"from": _iso(usage, first), "until": _iso(usage, last), "days": round(span_days, 2),
                       "step_s": usage.step, "timezone": inventory.policy.timezone},
            "settings": settings.__dict__, "gaps": {n: round(v, 3) for n, v in gaps.items()},
            "services": results, "teams": teams, "windows": proposal.pop("windows"),
            "buy": proposal.pop("buy"), "proposal": proposal, "notes": notes}


def _iso(usage: UsageData, index: int) -> str:
    t = usage.start + index * usage.step
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def _declared(w) -> dict | None:
    if w is None:
        return None
    out = {"kind": w.kind, "sharing": w.sharing, "replicas": w.replicas, "gpus": w.gpus}
    if w.memory_gib:
        out["memory_gib"] = w.memory_gib
    if w.mig_profile:
        out["mig_profile"] = w.mig_profile
    return out


def _evidence(f: dict) -> dict:
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


def _chart_data(ctx: _Context, f: dict, sl: slice) -> dict:
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
    return {"start": _iso(ctx.usage, sl.start), "hours": n // per,
            "memory_gib": hourly(f["mem_total"] / 1024.0), "gpus_active": hourly(f["act_total"])}


def _team_quotas(ctx: _Context, services: dict, sl: slice) -> list[dict]:
    """Per team: GPUs in use at once (whole GPUs, MIG slices as their share of the grid, a
    time-sliced GPU once), its percentile, its peak, and the idle hours of the day."""
    np = _np()
    s = ctx.settings
    out = []
    owned = Counter(g.team for n in ctx.inventory.nodes for g in n.gpus if g.team)
    for team in ctx.inventory.teams:
        devices = {}
        for (ns, _name), svc in services.items():
            if ctx.team_of_ns.get(ns) == team.name:
                for key, d in svc.devices.items():
                    up = ~(np.isnan(d.mem[sl]) & np.isnan(d.act[sl]))
                    devices[key] = (devices[key] | up) if key in devices else up
                    devices[key + ("frac",)] = d.unit_fraction
        in_use = np.zeros(len(range(*sl.indices(ctx.usage.steps))))
        for key, up in devices.items():
            if key[-1] != "frac":
                in_use = in_use + up * devices[key + ("frac",)]
        quota = float(np.percentile(in_use, s.quota_percentile)) if in_use.size else 0.0
        hours = ctx.hours[sl]
        idle_hours = [h for h in range(24) if in_use[hours == h].size and
                      float(np.percentile(in_use[hours == h], 95)) <= 1e-9]
        out.append({"team": team.name, "gpus_in_use_p": round(quota, 2), "percentile": s.quota_percentile,
                    "gpus_in_use_max": round(float(in_use.max()) if in_use.size else 0.0, 2),
                    "gpus_in_use_mean": round(float(in_use.mean()) if in_use.size else 0.0, 2),
                    "quota_proposed": int(math.ceil(quota - 1e-9)), "gpus_owned_now": owned.get(team.name, 0),
                    "idle_hours": idle_hours})
    return out


# --------------------------------------------------------------------------- the proposal


def _workload_entry(r: dict) -> dict:
    """A gpushare_workloads entry for an advised service."""
    w = {"name": r["name"], "team": r["team"], "kind": r["kind"], "sharing": r["sharing"]}
    if r["sharing"] == DRA:
        w["device_request"] = {"min_memory_gib": r["memory_gib"]}
        w.pop("sharing")
    elif r["sharing"] == TIMESLICE:
        pass
    else:
        w["memory_gib"] = r["memory_gib"]
    if r["sharing"] == MIG:
        w["mig_profile"] = r["mig_profile"]
    if r["replicas"] != 1:
        w["replicas"] = r["replicas"]
    if r["sharing"] == WHOLE and r["gpus"] != 1:
        w["gpus"] = r["gpus"]
    return w


def _raw_workload(w) -> dict:
    """The inventory entry of a current workload, as it would be written."""
    out = {"name": w.name, "team": w.team, "kind": w.kind}
    if w.sharing == DRA:
        out["device_request"] = {"min_memory_gib": w.min_memory_gib}
    else:
        out["sharing"] = w.sharing
    if w.memory_gib:
        out["memory_gib"] = w.memory_gib
    for key, value, default in (("replicas", w.replicas, 1), ("gpus", w.gpus, 1)):
        if value != default:
            out[key] = value
    if w.gpu_model:
        out["gpu_model"] = w.gpu_model
    if w.mig_profile:
        out["mig_profile"] = w.mig_profile
    return out


def _propose(ctx: _Context, results: list[dict], teams: list[dict], services: dict, sl: slice) -> dict:
    np = _np()
    inv = ctx.inventory
    current = {w.name: w for w in inv.workloads}
    multi_model = len({n.model for n in inv.nodes}) > 1
    workloads, advised = [], []
    for r in results:
        if r.get("status") == "ok":
            w = _workload_entry(r)
            if multi_model and r["sharing"] == MIG and r.get("model"):
                w["gpu_model"] = r["model"]
            workloads.append(w)
            advised.append(r)
        elif r["name"] in current:
            workloads.append(_raw_workload(current[r["name"]]))
    order = {w.name: i for i, w in enumerate(inv.workloads)}
    workloads.sort(key=lambda w: (order.get(w["name"], len(order)), w["name"]))
    # -- GPUs: place the advised demand on the current servers
    used_by = defaultdict(set)        # (node, gpu) -> services seen on it
    for (ns, name), svc in services.items():
        for d in svc.devices.values():
            used_by[(d.key[0], d.key[1])].add(name)
    free = {(n.name, g.index): g for n in inv.nodes if not n.dra for g in n.gpus}
    assigned: dict[tuple, dict] = {}
    unplaced = []

    def take(model: str | None, count: int, service_names: set, team: str) -> list[tuple]:
        cands = [k for k in free if (model is None or ctx.node_models[k[0]] == model)]
        cands.sort(key=lambda k: (not (used_by[k] & service_names), free[k].team != team, k))
        chosen = cands[:count]
        for k in chosen:
            free.pop(k)
        return chosen

    def kept(r):
        return r.get("status") != "ok" and r["name"] in current
    # whole serving first, then MIG, then time-sliced pools; training/batch get what is left
    for r in [r for r in advised if r["sharing"] == WHOLE and r["kind"] == "serving"]:
        need = r["replicas"] * r["gpus"]
        got = take(r["model"], need, {r["name"]}, r["team"])
        for k in got:
            assigned[k] = {"mode": WHOLE, "team": r["team"]}
        if len(got) < need:
            unplaced.append("%s: %d whole %s GPUs short" % (r["name"], need - len(got), r["model"]))
    mig_groups = defaultdict(list)
    for r in advised:
        if r["sharing"] == MIG:
            mig_groups[r["model"]].append(r)
    for model_key, group in mig_groups.items():
        card = gpu_catalog.CATALOG[model_key]
        bins: list[Counter] = []
        owners: list[Counter] = []
        slices = sorted(((card.profile(r["mig_profile"]), r) for r in group for _replica in range(r["replicas"])),
                        key=lambda pr: -pr[0].size)
        for profile, r in slices:
            for b, o in zip(bins, owners):
                trial = b + Counter({profile.name: 1})
                if mig_geometry.feasible(card, dict(trial)):
                    b[profile.name] += 1
                    o[r["team"]] += profile.size
                    break
            else:
                bins.append(Counter({profile.name: 1}))
                owners.append(Counter({r["team"]: profile.size}))
        names = {r["name"] for r in group}
        for o in owners:
            team = o.most_common(1)[0][0]
            got = take(model_key, 1, names, team)
            if got:
                assigned[got[0]] = {"mode": MIG, "team": team}
            else:
                unplaced.append("MIG services %s: one %s GPU short" % (", ".join(sorted(names)), model_key))
    pools = []
    for r in advised:
        if r["sharing"] == TIMESLICE:
            got = take(r["model"], r["pool_gpus"], {r["name"]}, r["team"])
            for k in got:
                assigned[k] = {"mode": TIMESLICE, "team": r["team"], "replicas": r["gpu_replicas"]}
            pools.append((r, got))
            if len(got) < r["pool_gpus"]:
                unplaced.append("%s: %d time-sliced %s GPUs short" % (r["name"], r["pool_gpus"] - len(got), r["model"]))
    # GPUs of services kept as they are (not enough data, unstable) keep their current mode
    for r in results:
        if kept(r):
            for k in list(free):
                if r["name"] in used_by[k]:
                    g = free.pop(k)
                    assigned[k] = _gpu_as_is(g)
    # training and batch: the rest, to their teams by their quota share
    batch_teams = Counter()
    for r in advised:
        if r["kind"] in ("training", "batch") and r["sharing"] == WHOLE:
            quota = next(t for t in teams if t["team"] == r["team"])
            batch_teams[r["team"]] = max(batch_teams[r["team"]], quota["quota_proposed"], r["gpus"])
    for team, want in sorted(batch_teams.items(), key=lambda kv: -kv[1]):
        names = {r["name"] for r in advised if r["team"] == team}
        for k in take(None, want, names, team):
            assigned[k] = {"mode": WHOLE, "team": team}
    for k, g in list(free.items()):          # spare GPUs stay with their owner, whole
        assigned[k] = {"mode": WHOLE, "team": g.team} if g.mode != AUTO else {"mode": AUTO, "team": g.team}
        free.pop(k)
    # -- windows from idle hours of the time-sliced pools, when a queued team could borrow
    windows = _windows(ctx, pools, teams, advised)
    for w in windows:
        for node, index in w["gpus"]:
            assigned[(node, index)]["schedule"] = [{"name": w["name"], "from": w["from"], "until": w["until"],
                                                   "mode": WHOLE}]
    nodes = _node_vars(ctx, assigned)
    return {"workloads": workloads, "nodes": nodes, "unplaced": unplaced, "windows": windows,
            "buy": _buy(ctx, advised, windows, unplaced)}


def _gpu_as_is(g) -> dict:
    out = {"mode": g.mode, "team": g.team}
    if g.replicas:
        out["replicas"] = g.replicas
    if g.mig_layout:
        out["mig_layout"] = dict(g.mig_layout)
    if g.windows:
        out["schedule"] = [{"name": w.name, "from": w.start, "until": w.end, "mode": w.mode} for w in g.windows]
    return out


def _idle_hours(ctx: _Context, f: dict, sl: slice) -> list[int]:
    """Hours of the day (policy time zone) in which the service is idle on every day: the
    95th percentile of its activity at that hour is below the idle threshold (an hour
    without samples is idle too)."""
    np = _np()
    hours = ctx.hours[sl]
    act = np.where(f["present"], f["act_rel"], 0.0)
    act = np.nan_to_num(act)
    return [h for h in range(24) if not (hours == h).any()
            or float(np.percentile(act[hours == h], 95)) < ctx.settings.idle_activity]


def _windows(ctx: _Context, pools: list, teams: list[dict], advised: list[dict]) -> list[dict]:
    """One daily window (one name, one set of hours: the planner plans a state per window)
    in which the time-sliced GPUs of teams that lend are idle and become whole GPUs, when a
    team that borrows runs training or batch work that could use them."""
    team_by_name = {t.name: t for t in ctx.inventory.teams}
    borrowers = {r["team"] for r in advised if r["kind"] in ("training", "batch") and team_by_name[r["team"]].borrow}
    candidates = []
    for r, gpus in pools:
        if not gpus or not team_by_name[r["team"]].lend or not (borrowers - {r["team"]}):
            continue
        candidates.append((r, gpus, [h in r["idle_hours"] for h in range(24)]))
    if not candidates:
        return []
    together = [all(c[2][h] for c in candidates) for h in range(24)]
    runs = _circular_runs(together) if any(together) else []
    if not runs or runs[0][1] < ctx.settings.min_window_hours or runs[0][1] == 24:
        return []
    start, length = runs[0]
    hours_set = {(start + k) % 24 for k in range(length)}
    name = "night" if 3 in hours_set else "idle"
    return [{"name": name, "from": "%02d:00" % start, "until": "%02d:00" % ((start + length) % 24),
             "mode": WHOLE, "gpus": [list(g) for c in candidates for g in c[1]],
             "teams": sorted({c[0]["team"] for c in candidates}), "for": sorted(borrowers),
             "why": "%s idle from %02d:00 to %02d:00 %s (95th percentile of activity below %.0f %%) on every day "
                    "of the window; whole then, so %s can borrow it through Kueue"
                    % (", ".join(sorted({c[0]["name"] for c in candidates})), start, (start + length) % 24,
                       ctx.inventory.policy.timezone, 100 * ctx.settings.idle_activity,
                       " and ".join(sorted(borrowers)))}]


def _node_vars(ctx: _Context, assigned: dict) -> dict:
    """host -> proposed gpushare_node (the current one with the GPUs replaced)."""
    out = {}
    for node in ctx.inventory.nodes:
        host, raw = ctx.raw_nodes[node.name]
        raw = dict(raw)
        gpus = []
        replicas = {}
        for g in node.gpus:
            a = assigned.get((node.name, g.index)) or _gpu_as_is(g)
            if a["mode"] in SHARED_MODES:
                replicas[a["mode"]] = max(replicas.get(a["mode"], 2), a.get("replicas", 2))
            gpus.append((g.index, a))
        entries = []
        for index, a in gpus:
            e = {"index": index, "mode": a["mode"]}
            if a.get("team"):
                e["team"] = a["team"]
            if a["mode"] in SHARED_MODES:
                e["replicas"] = replicas[a["mode"]]     # one replica count per node (device plugin)
            if a.get("mig_layout") and a["mode"] == MIG:
                e["mig_layout"] = a["mig_layout"]
            if a.get("schedule"):
                e["schedule"] = a["schedule"]
            if e["mode"] == AUTO and len(e) == 2:
                continue
            entries.append(e)
        raw["gpus"] = entries
        out[host] = raw
    return out


def _cards_per_replica(r: dict, card: gpu_catalog.GpuModel) -> int:
    """Cards of ``card`` one replica needs: its memory (all its GPUs together) and its compute
    counted in GPUs of the model it ran on (not scaled between models)."""
    return max(1, int(math.ceil(r["memory_need_mib"] / card.memory_mib - 1e-9)),
               int(math.ceil(r["compute_need"] - 1e-9)))


def _buy(ctx: _Context, advised: list[dict], windows: list[dict], unplaced: list[str]) -> dict:
    """How many cards of each catalogue model would serve the advised demand (by memory and
    MIG geometry; compute is not scaled between models), with the cost when priced."""
    prices = dict(getattr(ctx.inventory.policy, "gpu_prices", ()) or ())
    lent = sum(len(w["gpus"]) for w in windows)
    rows = []
    for card in gpu_catalog.CATALOG.values():
        cards = 0
        fits = True
        profiles = []
        for r in advised:
            need = r["memory_need_mib"]
            if r["sharing"] in (WHOLE, DRA) and r["kind"] == "serving" or r["sharing"] == DRA:
                cards += r["replicas"] * _cards_per_replica(r, card)
            elif r["sharing"] == MIG:
                p = choose_profile(card, need, r["compute_need"])
                if p is None or p.size == card.mig_grid:
                    cards += r["replicas"] * max(1, int(math.ceil(need / card.memory_mib)))
                else:
                    profiles += [p] * r["replicas"]
            elif r["sharing"] == TIMESLICE:
                cards += max(1, int(math.ceil(r["replicas"] * need / card.memory_mib)))
        if profiles:
            bins: list[Counter] = []
            for p in sorted(profiles, key=lambda p: -p.size):
                for b in bins:
                    if mig_geometry.feasible(card, dict(b + Counter({p.name: 1}))):
                        b[p.name] += 1
                        break
                else:
                    bins.append(Counter({p.name: 1}))
            cards += len(bins)
        batch = 0
        for r in advised:
            if r["kind"] in ("training", "batch") and r["sharing"] == WHOLE:
                per = _cards_per_replica(r, card)
                if per > 16:
                    fits = False
                batch = max(batch, per * r["replicas"])
        cards += max(0, batch - lent) if batch else 0
        if not fits:
            continue
        row = {"model": card.key, "cards": cards}
        if card.key in prices:
            row["price"] = prices[card.key]
            row["cost"] = round(prices[card.key] * cards, 2)
        rows.append(row)
    owned = Counter()
    for node in ctx.inventory.nodes:
        owned[node.model] += len(node.gpus)
    for row in rows:
        row["owned"] = owned.get(row["model"], 0)
        row["to_buy"] = max(0, row["cards"] - row["owned"])
    rows.sort(key=lambda r: (r.get("cost", float("inf")), r["to_buy"], r["cards"], r["model"]))
    return {"options": rows, "priced": bool(prices), "short": unplaced,
            "note": "cards by memory and MIG geometry for the advised demand; compute is not scaled between models"}
