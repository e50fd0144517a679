# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Usage history: ``fetch_usage`` reads dcgm-exporter and kube-state-metrics series from
Prometheus (``prometheus_client``) into ``UsageData``, one ``GpuSeries`` per (GPU or MIG
instance, pod) on one time grid.

What the data means (dcgm-exporter 4.x, GPU Operator v26.3.3; see docs/advisor.md):
``DCGM_FI_DEV_FB_USED`` is MiB and is missing for MIG instances on some setups;
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` is 0..1 and, on a MIG instance, relative to that instance;
``DCGM_FI_DEV_GPU_UTIL`` (percent) is never reported for MIG instances.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import re
from dataclasses import dataclass, field

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import model as inv_model
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import AdviceError, Settings
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.identity import NO_OWNER

SECONDS_PER_DAY = 86400


def _np():
    import numpy   # lazily: ansible-test's import sanity test runs without numpy
    return numpy


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
    # (namespace, owner_kind, owner_name) -> pods of that owner running at each grid point, as
    # PodCounts (or a plain array over the grid); a pod without a controller is its own group
    # (namespace, "<none>", pod)
    pods_running: dict = field(default_factory=dict)
    source: str = ""
    notes: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)   # (namespace, pod) -> ((kube_pod_labels key, value), ...)


@dataclass
class PodCounts:
    """Pods running at each grid point, kept only from the first to the last point with one:
    a Job per run (a CronJob's, a Kubeflow run's) is up a few hours of 28 days."""
    offset: int
    values: object                 # float32 array

    @classmethod
    def of(cls, counts) -> "PodCounts":
        np = _np()
        idx = np.flatnonzero(counts)
        lo, hi = (int(idx[0]), int(idx[-1]) + 1) if idx.size else (0, 0)
        return cls(lo, np.asarray(counts[lo:hi], dtype=np.float32))

    def full(self, steps: int):
        np = _np()
        out = np.zeros(steps)
        out[self.offset:self.offset + len(self.values)] = self.values
        return out


def counts_over(counts, steps: int):
    """Pod counts (PodCounts or an array) over the whole grid."""
    return counts.full(steps) if isinstance(counts, PodCounts) else counts


def iso(usage: UsageData, index: int) -> str:
    """The time of grid point ``index``, ISO 8601 in UTC to the minute."""
    t = usage.start + index * usage.step
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def present_mask(s: GpuSeries, steps: int):
    """Grid points where ``s`` has a memory or activity sample."""
    np = _np()
    p = np.zeros(steps, dtype=bool)
    for name in ("fb_used", "active"):
        arr = getattr(s, name)
        if arr is not None:
            p[s.offset:s.offset + len(arr)] |= ~np.isnan(arr)
    return p


# --------------------------------------------------------------------------- fetching

METRIC_MEMORY = "DCGM_FI_DEV_FB_USED"
METRIC_FREE = "DCGM_FI_DEV_FB_FREE"
METRIC_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
METRIC_UTIL = "DCGM_FI_DEV_GPU_UTIL"
METRIC_OWNER = "kube_pod_owner"
METRIC_LABELS = "kube_pod_labels"
METRIC_PHASE = "kube_pod_status_phase"
NODES_PER_QUERY = 8
_PROMQL_SPECIAL = re.compile(r"([.\\^$*+?()\[\]{}|])")


@dataclass
class _Grid:
    """The time grid the history is read onto."""
    start: float
    end: float
    step: int
    steps: int
    window: str                    # the range selector of the whole history, "28d"

    def of(self, times, values):
        """Samples (times and values, arrays from query_range_arrays) to an array over the
        grid (NaN where absent)."""
        np = _np()
        arr = np.full(self.steps, np.nan)
        idx = np.rint((times - self.start) / self.step).astype(np.int64)
        ok = (idx >= 0) & (idx < self.steps)
        arr[idx[ok]] = values[ok]
        return arr


def _add_row(series: dict, metric: str, labels: dict, values, ns_label: str, pod_label: str) -> None:
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


def fetch_usage(client, end: float, settings: Settings, label_names=()) -> UsageData:
    """Read ``settings.days`` of history ending at ``end`` from Prometheus; ``label_names``
    are the kube_pod_labels keys the workloads' selectors read (identity.py).

    Raises AdviceError naming the metric that is missing (no data at all, or no pod
    attribution), PrometheusError for transport problems (unreachable, TLS, auth).
    """
    step = settings.step
    start = end - settings.days * SECONDS_PER_DAY
    start = start - start % step
    grid = _Grid(start=start, end=end, step=step, steps=int((end - start) // step) + 1, window="%dd" % settings.days)
    have_active, have_util = _activity_metrics(client, grid, settings)
    # GPU_UTIL and FB_FREE after the others: they are read only where needed (_read_group).
    metrics = (METRIC_MEMORY,) + ((METRIC_ACTIVE,) if have_active else ()) + \
        ((METRIC_UTIL,) if have_util else ()) + (METRIC_FREE,)
    any_metric = METRIC_ACTIVE if have_active else METRIC_UTIL
    # honorLabels false (the chart's default) moves the pod's labels to exported_*
    exported = bool(client.query('count(last_over_time(%s{exported_namespace!=""}[%s]))' % (any_metric, grid.window),
                                 end))
    ns_label, pod_label = ("exported_namespace", "exported_pod") if exported else ("namespace", "pod")
    series = _read_series(client, grid, _node_selectors(client, grid, any_metric), metrics, (ns_label, pod_label))
    if not any(s.namespace for s in series):
        raise AdviceError("the dcgm-exporter series at %s carry no namespace or exported_namespace label: the "
                          "exporter does not attribute GPUs to pods. Its kubelet pod-resources mount must be on and "
                          "shared resources must be listed in NVIDIA_RESOURCE_NAMES (the monitoring role sets it "
                          "from the plan)" % client.url)
    namespaces = sorted({s.namespace for s in series if s.namespace})
    owners = _owners(client, grid, namespaces)
    notes = ["pod labels read from %s/%s" % (ns_label, pod_label)]
    running_only = bool(namespaces) and bool(client.query('count(last_over_time(%s{%s, phase="Running"}[%s]))'
                                                          % (METRIC_PHASE, _namespace_selector(namespaces),
                                                             grid.window), grid.end))
    if not running_only:
        notes.append("no %s: pods counted while kube-state-metrics lists them, Running or not" % METRIC_PHASE)
    return UsageData(start=start, step=step, steps=grid.steps, series=series, owners=owners,
                     pods_running=_pods_running(client, grid, namespaces, running_only, owners), source=client.url,
                     notes=notes, labels=_labels(client, grid, namespaces, tuple(label_names)))


def present_metric(client, metric: str, grid: "_Grid") -> int:
    """How many series of ``metric`` the window has."""
    rows = client.query("count(last_over_time(%s[%s]))" % (metric, grid.window), grid.end)
    return int(float(rows[0]["value"][1])) if rows else 0


def _activity_metrics(client, grid: _Grid, settings: Settings) -> tuple[bool, bool]:
    """Whether GR_ENGINE_ACTIVE and GPU_UTIL are there; AdviceError when what the advice
    needs is missing (no dcgm-exporter series, no activity, no kube_pod_owner)."""
    def present(metric: str) -> int:
        return present_metric(client, metric, grid)

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
    return have_active, have_util


def _node_selectors(client, grid: _Grid, any_metric: str) -> list[str]:
    """Label selectors of NODES_PER_QUERY nodes each: one answer for a whole fleet would not
    fit in memory (28 days of 1,000 GPUs is about 8 million samples per metric)."""
    hosts = []
    for row in client.query("count by (Hostname, hostname) (last_over_time(%s[%s]))" % (any_metric, grid.window),
                            grid.end):
        for label in ("Hostname", "hostname"):
            if row["metric"].get(label):
                hosts.append((label, row["metric"][label]))
    selectors = []
    for label in ("Hostname", "hostname"):
        names = sorted({h for lab, h in hosts if lab == label})
        for i in range(0, len(names), NODES_PER_QUERY):
            selectors.append('%s=~"%s"' % (label, "|".join(_PROMQL_SPECIAL.sub(r"\\\\\1", n)
                                                           for n in names[i:i + NODES_PER_QUERY])))
    return selectors if hosts else [""]


def _read_series(client, grid: _Grid, selectors: list[str], metrics: tuple, labels: tuple) -> list[GpuSeries]:
    """Every metric's series, a group of nodes at a time (two groups in flight: Prometheus
    answers one while this process decodes the other), each series compacted once read whole."""
    series: list[GpuSeries] = []
    for group in _two_at_a_time(lambda selector: _read_group(client, grid, selector, metrics, labels), selectors):
        series.extend(group)
    return series


def _read_group(client, grid: _Grid, selector: str, metrics: tuple, labels: tuple) -> list[GpuSeries]:
    group: dict[tuple, GpuSeries] = {}
    for metric in metrics:
        # Read only where used (at 1,000 GPUs each was a fifth of what Prometheus sent): FB_FREE
        # tells the memory of a card the catalogue does not know (features._read_device);
        # GPU_UTIL stands in for GR_ENGINE_ACTIVE on a whole GPU without it (_add_row).
        if metric == METRIC_FREE and group and all(s.model for s in group.values()):
            continue
        if metric == METRIC_UTIL and group and all(s.active is not None or s.instance for s in group.values()):
            continue
        for row in client.query_range_arrays("%s{%s}" % (metric, selector), grid.start, grid.end, grid.step):
            _add_row(group, metric, row.metric, grid.of(row.times, row.values), *labels)
    return [s.compact() for s in group.values()]


def _two_at_a_time(read, items: list) -> list:
    """``read(item)`` of every item, in order, two in flight at once."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(read, items))


def _namespace_selector(namespaces: list) -> str:
    return 'namespace=~"%s"' % "|".join(_PROMQL_SPECIAL.sub(r"\\\\\1", n) for n in namespaces)


def _owners(client, grid: _Grid, namespaces: list) -> dict:
    """(namespace, pod) -> (owner_kind, owner_name) from kube_pod_owner, in the namespaces
    that hold GPU pods."""
    owners = {}
    if not namespaces:
        return owners
    rows = client.query("max by (namespace, pod, owner_kind, owner_name) (max_over_time(%s{%s}[%s]))"
                        % (METRIC_OWNER, _namespace_selector(namespaces), grid.window), grid.end)
    for row in rows:
        labels = row["metric"]
        if labels.get("namespace") and labels.get("pod"):     # kube-state-metrics sets both; a relabelled copy may not
            owners[(labels["namespace"], labels["pod"])] = (labels.get("owner_kind"), labels.get("owner_name"))
    return owners


def _labels(client, grid: _Grid, namespaces: list, keys: tuple) -> dict:
    """(namespace, pod) -> ((key, value), ...) of the kube_pod_labels keys the selectors read;
    AdviceError naming kube-state-metrics' allowlist when one of them is never exported."""
    if not keys or not namespaces:
        return {}
    missing = [k for k in keys if not client.query('count(last_over_time(%s{%s!=""}[%s]))'
                                                   % (METRIC_LABELS, k, grid.window), grid.end)]
    if missing:
        raise AdviceError(
            "%s has no %s series with %s in the last %s: kube-state-metrics exports a pod label only when its "
            "allowlist names it (Helm value kube-state-metrics.metricLabelsAllowlist: \"pods=[<label>,...]\", "
            "flag --metric-labels-allowlist); add the labels the selectors of gpushare_advise_match read, or select "
            "pods by namespace, owner or name instead" % (client.url, METRIC_LABELS, ", ".join(missing), grid.window))
    out = {}
    rows = client.query("max by (namespace, pod, %s) (max_over_time(%s{%s}[%s]))"
                        % (", ".join(keys), METRIC_LABELS, _namespace_selector(namespaces), grid.window), grid.end)
    for row in rows:
        labels = row["metric"]
        found = tuple((k, labels[k]) for k in keys if labels.get(k))
        key = (labels.get("namespace"), labels.get("pod"))
        out[key] = tuple(sorted(set(out.get(key, ())) | set(found)))
    return out


def _pods_running(client, grid: _Grid, namespaces: list, running_only: bool, owners: dict) -> dict:
    """(namespace, owner_kind, owner_name) -> pods of that owner running at each grid point
    (a pod without a controller: (namespace, "<none>", pod)), a namespace at a time (two in
    flight) so a large fleet is never one answer. Pods kube-state-metrics lists but that are not
    Running (Pending, completed Job pods kept by the CronJob's history limit) are left out when
    kube_pod_status_phase is there.

    With the phase metric, the Running pods' series are read as they are and counted here per
    owner (``owners``, from kube_pod_owner): asking Prometheus to join them with kube_pod_owner
    and count made it evaluate the join at each of the 8,064 steps of 28 days, 96 of the 172
    seconds advise.yml took for 1,000 GPUs (docs/performance.md). Without it, Prometheus counts
    kube_pod_owner's series per owner (no join)."""
    out = {}
    for counts in _two_at_a_time(lambda ns: _pods_running_in(client, grid, ns, running_only, owners), namespaces):
        out.update(counts)
    return out


def _pods_running_in(client, grid: _Grid, ns: str, running_only: bool, owners: dict) -> dict:
    np = _np()
    counts: dict = {}
    if running_only:
        running: dict = {}     # pod -> Running at each grid point (one pod once, however many series)
        # A plain select; "== 1" in the query took Prometheus 4 times as long (a comparison per step).
        for row in client.query_range_arrays('%s{namespace="%s", phase="Running"}' % (METRIC_PHASE, ns),
                                             grid.start, grid.end, grid.step):
            pod = row.metric.get("pod")
            running[pod] = running.get(pod, False) | (grid.of(row.times, row.values) == 1)
        for pod, up in running.items():
            if (ns, pod) not in owners:
                continue            # no kube_pod_owner series: not a pod kube-state-metrics lists
            kind, name = owners[(ns, pod)]
            key = (ns, NO_OWNER, pod) if kind == NO_OWNER else (ns, kind, name)
            counts[key] = counts.get(key, 0) + up
    else:
        for by, owned in (("owner_kind, owner_name", '!="%s"' % NO_OWNER), ("pod", '="%s"' % NO_OWNER)):
            query = 'count by (namespace, %s) (%s{namespace="%s", owner_kind%s})' % (by, METRIC_OWNER, ns, owned)
            for row in client.query_range_arrays(query, grid.start, grid.end, grid.step):
                labels = row.metric
                key = (ns, NO_OWNER, labels.get("pod")) if by == "pod" else \
                    (ns, labels.get("owner_kind"), labels.get("owner_name"))
                counts[key] = counts.get(key, 0) + np.nan_to_num(grid.of(row.times, row.values))
    return {key: PodCounts.of(np.asarray(c, dtype=float)) for key, c in counts.items()}
