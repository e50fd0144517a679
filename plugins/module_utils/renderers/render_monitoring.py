# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to the monitoring objects: a PrometheusRule (per-team recording rules and alerts)
and the "GPU sharing by team" Grafana dashboard.

Metric names and labels, as the pinned upstream code has them:
* dcgm-exporter 4.5-4.8 (the version GPU Operator v26.3.3 pins; etc/dcp-metrics-included.csv,
  internal/pkg/transformation/kubernetes.go): DCGM_FI_PROF_GR_ENGINE_ACTIVE (whole GPUs and
  MIG instances, relative to the instance; DCGM_FI_DEV_GPU_UTIL is never reported for MIG),
  DCGM_FI_DEV_FB_USED (MiB; missing on some MIG instances), DCGM_FI_DEV_XID_ERRORS (a gauge of
  the last XID). Device labels UUID (the parent GPU's on MIG), GPU_I_PROFILE/GPU_I_ID (MIG
  only), modelName, Hostname (hostname on newer builds). Pod attribution adds namespace/pod/
  container, which a ServiceMonitor with honorLabels false (the chart default) renames
  exported_namespace/...; only resources named nvidia.com/gpu, nvidia.com/mig-* or listed in
  NVIDIA_RESOURCE_NAMES are attributed (render_helm sets it from the Plan), and GPUs allocated
  through DRA are not attributed at all with GPU Operator v26.3.3 (see docs/monitoring.md).
* A time-sliced GPU's series go to one sharer or are copied to every sharer (dcgm-exporter
  issues 307, 587), so every team rule first takes one series per device
  (max by UUID, GPU_I_ID): a time-sliced GPU counts once, as one pool.
* Kueue v0.19.2 pkg/metrics/metrics.go: kueue_cluster_queue_resource_usage and
  kueue_cluster_queue_nominal_quota (cohort, cluster_queue, flavor, resource; only with
  Configuration metrics.enableClusterQueueResources), kueue_admission_wait_time_seconds
  (histogram, cluster_queue), kueue_pending_workloads (cluster_queue, status).
* kube-state-metrics: kube_node_labels with label_nvidia_com_mig_config_state, present only
  when metricLabelsAllowlist names nodes=[nvidia.com/mig.config.state].

Every rule reads raw series only (none reads another recorded series), so promtool can
backfill their history and each can be tested alone.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpushare.cluster.plugins.module_utils.hardware import gpu_catalog
from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.names import MANAGED_LABEL

DASHBOARD_UID = "gpushare-by-team"
# Kueue quota resources that are GPUs: whole, MIG (nvidia.com/mig-*), time-sliced
# (*.shared) and DRA device-class mappings named by the Plan (gpushare.cluster/*).
GPU_RESOURCE_REGEX = "nvidia\\\\.com/.+|gpushare\\\\.cluster/.+"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GPU_RESOURCE_MATCH = 'resource=~"%s"' % GPU_RESOURCE_REGEX
# Where the pod's namespace is on DCGM series: "namespace" (ServiceMonitor honorLabels true,
# as the gpu_operator role sets it), "exported_namespace" (honorLabels false, the chart's
# default, e.g. an operator installed elsewhere) or "auto": either, whichever is there.
NAMESPACE_LABELS = ("namespace", "exported_namespace")
NAMESPACE_LABEL_CHOICES = ("auto",) + NAMESPACE_LABELS
# One series per device: a whole GPU (UUID) or a MIG instance (UUID + GPU_I_ID).
DEVICE_KEY = "UUID, GPU_I_ID, GPU_I_PROFILE, modelName"
HOST_LABELS = ("Hostname", "hostname")


def team_namespaces(plan: dict) -> dict[str, list[str]]:
    return {team["name"]: list(team["namespaces"]) for team in plan["teams"]}


def namespace_regex(namespaces: list[str]) -> str:
    """Namespaces are DNS labels (a-z, 0-9, -): nothing to escape in a PromQL regex."""
    for ns in namespaces:
        if not _DNS_LABEL.match(ns):
            raise ValueError("namespace %r is not a DNS label" % ns)
    return "|".join(namespaces)


def _namespace_labels(namespace_label: str) -> tuple:
    if namespace_label not in NAMESPACE_LABEL_CHOICES:
        raise ValueError("namespace_label: %r is not one of %s; use exported_namespace when the DCGM "
                         "ServiceMonitor has honorLabels false, namespace when true, auto for either"
                         % (namespace_label, ", ".join(NAMESPACE_LABEL_CHOICES)))
    return NAMESPACE_LABELS if namespace_label == "auto" else (namespace_label,)


def team_series(metric: str, team: dict, namespace_label: str = "auto", matchers: str = "") -> str:
    """METRIC of the team's pods, one series per device (time-sliced sharers' copies collapse)."""
    regex = namespace_regex(team["namespaces"])
    extra = (", " + matchers) if matchers else ""
    selectors = " or ".join('%s{%s=~"%s"%s}' % (metric, label, regex, extra) for label in _namespace_labels(namespace_label))
    return "max by (%s) (%s)" % (DEVICE_KEY, selectors)


def _full_compute_slices(model_key: str) -> int:
    model = gpu_catalog.lookup(model_key)
    return max((p.compute_slices for p in model.mig_profiles), default=1) if model else 1


def mig_profiles(plan: dict) -> list[tuple[str, str, int, int]]:
    """(modelName, profile, compute slices, the card's compute slices) of every MIG instance
    the Plan or one of its windows creates."""
    found = set()
    for nodes in [plan["nodes"]] + [w["nodes"] for w in plan.get("windows", [])]:
        for node in nodes:
            for gpu in node["gpus"]:
                for s in (gpu.get("mig") or {}).get("slices", []):
                    g = int(s["profile"].split("g.", 1)[0])
                    found.add((node["product"], s["profile"], g, _full_compute_slices(node["model"])))
    return sorted(found)


def busy_gpus_expr(plan: dict, team: dict, namespace_label: str = "auto") -> str:
    """Engine activity of the team's devices in whole-GPU terms: a MIG instance's activity is
    relative to the instance, so it counts g/G of a GPU (a 2g instance busy 50 % on a 7-slice
    card is 1/7 of a GPU). 0 when the team has no GPU pod."""
    metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    terms = ["(sum(%s) or vector(0))" % team_series(metric, team, namespace_label, 'GPU_I_PROFILE=""')]
    for product, profile, g, full in mig_profiles(plan):
        sel = 'GPU_I_PROFILE="%s", modelName="%s"' % (profile, product)
        terms.append("(sum(%s) * %d / %d or vector(0))" % (team_series(metric, team, namespace_label, sel), g, full))
    return " + ".join(terms)


def dra_nodes(plan: dict) -> list[str]:
    return sorted({n["name"] for n in plan["nodes"] if n.get("dra")})


def dra_teams(plan: dict) -> list[dict]:
    """Teams whose quota holds DRA devices (owns keys "<flavor> gpushare.cluster/...")."""
    return [t for t in plan["teams"] if any(k.split(" ", 1)[-1].startswith("gpushare.cluster/") for k in t["owns"])]


def node_series(metric: str, nodes: list[str], how: str) -> str:
    """METRIC of the DRA nodes' GPUs by node (label node from Hostname or hostname)."""
    regex = "|".join(nodes)
    parts = ['label_replace(%s{%s=~"%s"}, "node", "$1", "%s", "(.+)")' % (metric, h, regex, h) for h in HOST_LABELS]
    return "%s by (node) (max by (node, %s) (%s))" % (how, DEVICE_KEY, " or ".join(parts))


def recording_rules(plan: dict, namespace_label: str = "auto", admission_window: str = "30m") -> list[dict]:
    """Per team: GPU devices, activity, busy GPUs and memory from DCGM (by the team's
    namespaces), quota use, borrowing, pending workloads and admission wait from Kueue (by
    its ClusterQueue); per team with DRA quota, the DRA nodes' activity and memory by node
    (DRA GPUs are not attributed to pods). Every series carries label team."""
    rules = []
    for team in plan["teams"]:
        labels = {"team": team["name"]}
        cq = 'cluster_queue="%s"' % team["cluster_queue"]
        usage = "sum by (resource, flavor) (kueue_cluster_queue_resource_usage{%s, %s})" % (cq, GPU_RESOURCE_MATCH)
        nominal = "sum by (resource, flavor) (kueue_cluster_queue_nominal_quota{%s, %s})" % (cq, GPU_RESOURCE_MATCH)
        rules += [
            {"record": "gpushare:team_gpu_devices:count",
             "expr": "count(%s) or vector(0)" % team_series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", team, namespace_label),
             "labels": labels},
            {"record": "gpushare:team_gr_engine_active:avg",
             "expr": "avg(%s)" % team_series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", team, namespace_label), "labels": labels},
            {"record": "gpushare:team_gpu_busy:sum", "expr": busy_gpus_expr(plan, team, namespace_label), "labels": labels},
            {"record": "gpushare:team_fb_used_mib:sum",
             "expr": "sum(%s)" % team_series("DCGM_FI_DEV_FB_USED", team, namespace_label), "labels": labels},
            {"record": "gpushare:team_quota_usage:sum", "expr": usage, "labels": labels},
            {"record": "gpushare:team_quota_nominal:sum", "expr": nominal, "labels": labels},
            # Devices in use beyond the team's own nominal quota = borrowed from the cohort.
            {"record": "gpushare:team_borrowed:sum", "expr": "clamp_min(%s - %s, 0)" % (usage, nominal), "labels": labels},
            {"record": "gpushare:team_quota_usage:ratio", "expr": "%s / (%s > 0)" % (usage, nominal), "labels": labels},
            {"record": "gpushare:team_pending_workloads:sum",
             "expr": "sum by (status) (kueue_pending_workloads{%s})" % cq, "labels": labels},
            {"record": "gpushare:team_admission_wait_seconds:p90",
             "expr": "histogram_quantile(0.9, sum by (le) (rate(kueue_admission_wait_time_seconds_bucket{%s}[%s])))"
                     % (cq, admission_window), "labels": labels},
        ]
    nodes = dra_nodes(plan)
    for team in dra_teams(plan) if nodes else []:
        labels = {"team": team["name"]}
        rules += [
            {"record": "gpushare:team_dra_node_gr_engine_active:avg",
             "expr": node_series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", nodes, "avg"), "labels": labels},
            {"record": "gpushare:team_dra_node_fb_used_mib:sum",
             "expr": node_series("DCGM_FI_DEV_FB_USED", nodes, "sum"), "labels": labels},
        ]
    return rules


def ksm_label(key: str) -> str:
    """kube-state-metrics' name for the Kubernetes label ``key`` in kube_node_labels:
    label_ and the key with each character outside [a-zA-Z0-9_] as _."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def alert_rules(queue_wait_seconds: int = 3600, mig_failed_for: str = "5m", xid_window: str = "15m") -> list[dict]:
    """DCGM_FI_DEV_XID_ERRORS holds the last XID seen, so "> 0" would fire for ever after one
    error: the alert fires when the value changes to a non-zero XID, for XID_WINDOW."""
    xid = "DCGM_FI_DEV_XID_ERRORS"
    return [
        {"alert": "GpuXidError",
         "expr": "max by (Hostname, hostname, gpu, UUID, modelName) (%s != 0 and changes(%s[%s]) > 0)" % (xid, xid, xid_window),
         "labels": {"severity": "critical"},
         "annotations": {"summary": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} reported XID {{ $value }}",
                         "description": "DCGM reports a new XID error of the GPU (the last XID seen changed within %s); "
                                        "see NVIDIA's XID catalogue. Check the node's kernel log (dmesg) and the pods "
                                        "on this GPU." % xid_window}},
        {"alert": "GpuMigConfigFailed",
         "expr": 'max by (node) (kube_node_labels{%s="failed"}) == 1' % ksm_label(names.MIG_CONFIG_STATE_LABEL),
         "for": mig_failed_for, "labels": {"severity": "critical"},
         "annotations": {"summary": "MIG Manager failed to apply the MIG layout on {{ $labels.node }}",
                         "description": "%s=failed; the MIG Manager pod log on the node says why. GPU pods "
                                        "there were stopped for the change." % names.MIG_CONFIG_STATE_LABEL}},
        {"alert": "KueueLongQueueWait",
         "expr": "histogram_quantile(0.9, sum by (cluster_queue, le) "
                 "(rate(kueue_admission_wait_time_seconds_bucket[30m]))) > %d" % queue_wait_seconds,
         "for": "15m", "labels": {"severity": "warning"},
         "annotations": {"summary": "Workloads in ClusterQueue {{ $labels.cluster_queue }} wait over %ds for admission (p90)"
                                    % queue_wait_seconds}},
        {"alert": "KueueWorkloadsPendingLong",
         "expr": "sum by (cluster_queue) (kueue_pending_workloads) > 0",
         "for": "%ds" % queue_wait_seconds, "labels": {"severity": "warning"},
         "annotations": {"summary": "ClusterQueue {{ $labels.cluster_queue }} has had pending workloads for %ds"
                                    % queue_wait_seconds}},
    ]


def rule_groups(plan: dict, namespace_label: str = "auto", queue_wait_seconds: int = 3600) -> list[dict]:
    """The rule groups, as a Prometheus rule file or a PrometheusRule's spec holds them."""
    return [
        {"name": "gpushare.team-usage", "interval": "1m", "rules": recording_rules(plan, namespace_label)},
        {"name": "gpushare.alerts", "rules": alert_rules(queue_wait_seconds)},
    ]


def prometheus_rule(plan: dict, namespace: str = names.MONITORING_NAMESPACE, namespace_label: str = "auto",
                    queue_wait_seconds: int = 3600) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": names.PROMETHEUS_RULE, "namespace": namespace, "labels": dict(MANAGED_LABEL)},
        "spec": {"groups": rule_groups(plan, namespace_label, queue_wait_seconds)},
    }


def _target(expr: str, legend: str, ref: str = "A", instant: bool = False) -> dict:
    target = {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
              "legendFormat": legend, "refId": ref}
    if instant:
        target["instant"] = True
        target["range"] = False
    return target


def _panel(pid: int, title: str, kind: str, targets: list, grid: tuple, unit: str = "short",
           description: str = "") -> dict:
    x, y, w, h = grid
    return {"id": pid, "type": kind, "title": title, "description": description,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"x": x, "y": y, "w": w, "h": h}, "targets": targets,
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}}


def quota_markdown(plan: dict) -> str:
    lines = ["| team | namespaces | ClusterQueue | owns (flavor resource: count) |", "|---|---|---|---|"]
    for team in plan["teams"]:
        owns = ", ".join("%s: %s" % (k, v) for k, v in sorted(team["owns"].items())) or "nothing (borrows only)"
        lines.append("| %s | %s | %s | %s |" % (team["name"], ", ".join(team["namespaces"]), team["cluster_queue"], owns))
    return "\n".join(lines)


def team_dashboard(plan: dict) -> dict:
    """Grafana dashboard JSON: use against quota, borrowed device-hours, queue wait, activity,
    busy GPUs and memory; every panel follows the $team variable."""
    teams = [t["name"] for t in plan["teams"]]
    team_sel = 'team=~"$team"'
    panels = [
        _panel(1, "Plan: what each team owns", "text", [], (0, 0, 24, 5),
               description="From the gpushare.cluster Plan of cluster %s." % plan["cluster"]["name"]),
        _panel(2, "GPU quota in use (admitted / nominal)", "timeseries",
               [_target("gpushare:team_quota_usage:ratio{%s}" % team_sel, "{{team}} {{resource}}")],
               (0, 5, 12, 8), unit="percentunit",
               description="Kueue: kueue_cluster_queue_resource_usage / kueue_cluster_queue_nominal_quota per GPU resource; "
                           "above 100% the team borrows from the cohort."),
        _panel(3, "GPUs in use vs quota", "timeseries",
               [_target("sum by (team) (gpushare:team_quota_usage:sum{%s})" % team_sel, "{{team}} in use", "A"),
                _target("sum by (team) (gpushare:team_quota_nominal:sum{%s})" % team_sel, "{{team}} nominal", "B")],
               (12, 5, 12, 8),
               description="Devices of every GPU resource (whole GPUs, MIG slices, time-slice replicas, DRA devices) summed."),
        _panel(4, "Borrowed device-hours (dashboard range)", "stat",
               [_target("sum by (team) (sum_over_time(gpushare:team_borrowed:sum{%s}[$__range:1m])) / 60" % team_sel,
                        "{{team}}", instant=True)],
               (0, 13, 8, 6), unit="h",
               description="Integral of devices used beyond the team's nominal quota, sampled each minute."),
        _panel(5, "Queue wait p90 before admission", "timeseries",
               [_target("gpushare:team_admission_wait_seconds:p90{%s}" % team_sel, "{{team}}")],
               (8, 13, 8, 6), unit="s",
               description="90th percentile of Kueue's admission wait over 30 minutes, per team's ClusterQueue "
                           "(empty or NaN while nothing was admitted)."),
        _panel(6, "Pending workloads", "timeseries",
               [_target("gpushare:team_pending_workloads:sum{%s}" % team_sel, "{{team}} {{status}}")],
               (16, 13, 8, 6)),
        _panel(7, "GPU engine active per team (whole GPUs and MIG slices)", "timeseries",
               [_target("gpushare:team_gr_engine_active:avg{%s}" % team_sel, "{{team}}")],
               (0, 19, 12, 8), unit="percentunit",
               description="DCGM_FI_PROF_GR_ENGINE_ACTIVE averaged over the team's GPUs and MIG instances, each relative "
                           "to its own size (DCGM_FI_DEV_GPU_UTIL is not reported for MIG); a time-sliced GPU counts once."),
        _panel(8, "GPU memory used per team", "timeseries",
               [_target("gpushare:team_fb_used_mib:sum{%s}" % team_sel, "{{team}}")],
               (12, 19, 12, 8), unit="mbytes",
               description="DCGM_FI_DEV_FB_USED (MiB) of the team's devices; some MIG instances do not report memory "
                           "(dcgm-exporter issues 380, 512)."),
        _panel(9, "Busy GPUs and devices per team", "timeseries",
               [_target("gpushare:team_gpu_busy:sum{%s}" % team_sel, "{{team}} busy (whole-GPU terms)", "A"),
                _target("gpushare:team_gpu_devices:count{%s}" % team_sel, "{{team}} devices with its pods", "B")],
               (0, 27, 12, 8),
               description="Engine activity in whole-GPU terms (a MIG instance counts its share of the card) and the "
                           "number of GPUs and MIG instances the team's pods hold."),
    ]
    if dra_nodes(plan) and dra_teams(plan):
        panels.append(_panel(
            10, "DRA nodes the team draws from (per node, not per team)", "timeseries",
            [_target("gpushare:team_dra_node_gr_engine_active:avg{%s}" % team_sel, "{{team}} {{node}} engine active", "A"),
             _target("gpushare:team_dra_node_fb_used_mib:sum{%s}" % team_sel, "{{team}} {{node}} memory MiB", "B")],
            (12, 27, 12, 8),
            description="GPUs allocated through DRA carry no pod labels (GPU Operator v26.3.3 does not let "
                        "dcgm-exporter read ResourceSlices), so their use is shown per node for every team "
                        "whose quota holds DRA devices; the team's own DRA devices in use are in 'GPUs in use vs quota'."))
    panels[0]["options"] = {"mode": "markdown", "content": quota_markdown(plan)}
    return {
        "uid": DASHBOARD_UID, "title": "GPU sharing by team", "tags": ["gpushare", "gpu", "kueue"],
        "schemaVersion": 39, "version": 1, "editable": False, "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source",
             "current": {"text": "Prometheus", "value": "prometheus"}},
            {"name": "team", "type": "custom", "label": "Team", "multi": True, "includeAll": True,
             "query": ",".join(teams), "current": {"text": "All", "value": "$__all"},
             "options": [{"text": t, "value": t, "selected": False} for t in teams]},
        ]},
        "panels": panels,
    }


def dashboard_configmap(plan: dict, namespace: str = names.MONITORING_NAMESPACE) -> dict:
    """The dashboard as a ConfigMap the Grafana sidecar loads (label grafana_dashboard=1)."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": names.DASHBOARD_CONFIGMAP, "namespace": namespace,
                     "labels": dict(MANAGED_LABEL, **{names.GRAFANA_DASHBOARD_LABEL: names.GRAFANA_DASHBOARD_LABEL_VALUE})},
        "data": {"gpu-sharing-by-team.json": json.dumps(team_dashboard(plan), indent=1, sort_keys=True)},
    }


def monitoring_objects(plan: dict, namespace: str = names.MONITORING_NAMESPACE, namespace_label: str = "auto",
                       queue_wait_seconds: int = 3600) -> list[dict]:
    """The monitoring role's objects: the PrometheusRule and the team dashboard ConfigMap.

    The PrometheusRule holds per-team usage recording rules and the alerts (XID errors, failed
    MIG changes, long queue waits); the ConfigMap holds the Grafana team dashboard, which
    Grafana's sidecar loads (label grafana_dashboard=1).

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        namespace: namespace of the two objects (kube-prometheus-stack's).
        namespace_label: the label holding the pod namespace on DCGM series: ``namespace`` (the DCGM
            ServiceMonitor has honorLabels true, the gpu_operator role's setting),
            ``exported_namespace`` (honorLabels false) or ``auto`` (either, whichever is there).
        queue_wait_seconds: the queue-wait alerts fire when workloads wait longer than this many
            seconds for admission.

    Returns:
        ``[PrometheusRule, ConfigMap]``, a list of two Kubernetes objects (dicts).
    """
    return [prometheus_rule(plan, namespace, namespace_label, queue_wait_seconds), dashboard_configmap(plan, namespace)]
