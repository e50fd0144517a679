# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to the monitoring objects: a PrometheusRule (per-team recording rules and alerts)
and the "GPU sharing by team" Grafana dashboard.

Metric names and labels:
* DCGM exporter (nvidia_specifics.md §6): DCGM_FI_PROF_GR_ENGINE_ACTIVE (reported for whole
  GPUs and MIG instances; the *_UTIL metrics are absent on MIG), DCGM_FI_DEV_FB_USED (MiB),
  DCGM_FI_DEV_XID_ERRORS; pod attribution in ``namespace``/``pod`` (the ServiceMonitor has
  honorLabels true; with false they arrive as exported_namespace/exported_pod).
* Kueue v0.19.2 ``pkg/metrics/metrics.go``: kueue_cluster_queue_resource_usage and
  kueue_cluster_queue_nominal_quota (labels cohort, cluster_queue, flavor, resource; only
  with Configuration metrics.enableClusterQueueResources), kueue_admission_wait_time_seconds
  (histogram, label cluster_queue), kueue_pending_workloads (cluster_queue, status).
* kube-state-metrics: kube_node_labels with label_nvidia_com_mig_config_state, present only
  when metricLabelsAllowlist names nodes=[nvidia.com/mig.config.state].
"""

from __future__ import annotations

import json
import re

MANAGED_LABEL = {"app.kubernetes.io/managed-by": "gpushare.cluster"}
PROMETHEUS_RULE_NAME = "gpushare-gpu-sharing"
DASHBOARD_CONFIGMAP = "gpushare-dashboard-gpu-sharing"
DASHBOARD_UID = "gpushare-by-team"
# Kueue quota resources that are GPUs: whole, MIG (nvidia.com/mig-*), time-sliced
# (*.shared) and DRA device-class mappings named by the Plan (gpushare.cluster/*).
GPU_RESOURCE_REGEX = "nvidia\\\\.com/.+|gpushare\\\\.cluster/.+"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GPU_RESOURCE_MATCH = 'resource=~"%s"' % GPU_RESOURCE_REGEX


def team_namespaces(plan: dict) -> dict[str, list[str]]:
    return {team["name"]: list(team["namespaces"]) for team in plan["teams"]}


def namespace_regex(namespaces: list[str]) -> str:
    """Namespaces are DNS labels (a-z, 0-9, -): nothing to escape in a PromQL regex."""
    for ns in namespaces:
        if not _DNS_LABEL.match(ns):
            raise ValueError("namespace %r is not a DNS label" % ns)
    return "|".join(namespaces)


def _selector(team: dict, namespace_label: str) -> str:
    return '%s=~"%s"' % (namespace_label, namespace_regex(team["namespaces"]))


def recording_rules(plan: dict, namespace_label: str = "namespace") -> list[dict]:
    """Per team: GPU activity and memory from DCGM (by the team's namespaces), quota use and
    borrowing from Kueue (by the team's ClusterQueue). Every series carries label team."""
    rules = []
    for team in plan["teams"]:
        labels = {"team": team["name"]}
        sel = _selector(team, namespace_label)
        cq = 'cluster_queue="%s"' % team["cluster_queue"]
        rules += [
            {"record": "gpushare:team_gpu_devices:count",
             "expr": "count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s}) or vector(0)" % sel, "labels": labels},
            {"record": "gpushare:team_gr_engine_active:avg",
             "expr": "avg(DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s})" % sel, "labels": labels},
            {"record": "gpushare:team_gr_engine_active:sum",
             "expr": "sum(DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s})" % sel, "labels": labels},
            {"record": "gpushare:team_fb_used_mib:sum",
             "expr": "sum(DCGM_FI_DEV_FB_USED{%s})" % sel, "labels": labels},
            {"record": "gpushare:team_quota_usage:sum",
             "expr": "sum by (resource, flavor) (kueue_cluster_queue_resource_usage{%s, %s})" % (cq, GPU_RESOURCE_MATCH),
             "labels": labels},
            {"record": "gpushare:team_quota_nominal:sum",
             "expr": "sum by (resource, flavor) (kueue_cluster_queue_nominal_quota{%s, %s})" % (cq, GPU_RESOURCE_MATCH),
             "labels": labels},
        ]
    rules += [
        # Devices in use beyond the team's own nominal quota = borrowed from the cohort.
        {"record": "gpushare:team_borrowed:sum",
         "expr": "clamp_min(gpushare:team_quota_usage:sum - gpushare:team_quota_nominal:sum, 0)"},
        {"record": "gpushare:team_quota_usage:ratio",
         "expr": "gpushare:team_quota_usage:sum / (gpushare:team_quota_nominal:sum > 0)"},
    ]
    return rules


def alert_rules(queue_wait_seconds: int = 3600, mig_failed_for: str = "5m") -> list[dict]:
    return [
        {"alert": "GpuXidError",
         "expr": "max by (Hostname, hostname, gpu, UUID, modelName) (DCGM_FI_DEV_XID_ERRORS) > 0",
         "for": "1m", "labels": {"severity": "critical"},
         "annotations": {"summary": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} reported XID {{ $value }}",
                         "description": "DCGM reports the last XID error of the GPU; see NVIDIA's XID catalogue. "
                                        "Check the node's kernel log (dmesg) and the pods on this GPU."}},
        {"alert": "GpuMigConfigFailed",
         "expr": 'max by (node) (kube_node_labels{label_nvidia_com_mig_config_state="failed"}) == 1',
         "for": mig_failed_for, "labels": {"severity": "critical"},
         "annotations": {"summary": "MIG Manager failed to apply the MIG layout on {{ $labels.node }}",
                         "description": "nvidia.com/mig.config.state=failed; the MIG Manager pod log on the node "
                                        "says why. GPU pods there were stopped for the change."}},
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


def prometheus_rule(plan: dict, namespace: str = "monitoring", namespace_label: str = "namespace",
                    queue_wait_seconds: int = 3600) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": PROMETHEUS_RULE_NAME, "namespace": namespace, "labels": dict(MANAGED_LABEL)},
        "spec": {"groups": [
            {"name": "gpushare.team-usage", "interval": "1m", "rules": recording_rules(plan, namespace_label)},
            {"name": "gpushare.alerts", "rules": alert_rules(queue_wait_seconds)},
        ]},
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
    """Grafana dashboard JSON: use against quota, borrowed device-hours, queue wait, activity."""
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
               description="Devices of every GPU resource (whole GPUs, MIG slices, time-slice replicas) summed."),
        _panel(4, "Borrowed device-hours (dashboard range)", "stat",
               [_target("sum by (team) (sum_over_time(gpushare:team_borrowed:sum{%s}[$__range:1m])) / 60" % team_sel,
                        "{{team}}", instant=True)],
               (0, 13, 8, 6), unit="h",
               description="Integral of devices used beyond the team's nominal quota, sampled each minute."),
        _panel(5, "Queue wait p90 before admission", "timeseries",
               [_target("histogram_quantile(0.9, sum by (cluster_queue, le) "
                        "(rate(kueue_admission_wait_time_seconds_bucket[$__rate_interval])))", "{{cluster_queue}}")],
               (8, 13, 8, 6), unit="s"),
        _panel(6, "Pending workloads", "timeseries",
               [_target("sum by (cluster_queue, status) (kueue_pending_workloads)", "{{cluster_queue}} {{status}}")],
               (16, 13, 8, 6)),
        _panel(7, "GPU engine active per team (whole GPUs and MIG slices)", "timeseries",
               [_target("gpushare:team_gr_engine_active:avg{%s}" % team_sel, "{{team}}")],
               (0, 19, 12, 8), unit="percentunit",
               description="DCGM_FI_PROF_GR_ENGINE_ACTIVE averaged over the team's GPUs and slices "
                           "(DCGM_FI_DEV_GPU_UTIL is not reported for MIG)."),
        _panel(8, "GPU memory used per team", "timeseries",
               [_target("gpushare:team_fb_used_mib:sum{%s}" % team_sel, "{{team}}")],
               (12, 19, 12, 8), unit="decmbytes"),
    ]
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


def dashboard_configmap(plan: dict, namespace: str = "monitoring") -> dict:
    """The dashboard as a ConfigMap the Grafana sidecar loads (label grafana_dashboard=1)."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": DASHBOARD_CONFIGMAP, "namespace": namespace,
                     "labels": dict(MANAGED_LABEL, grafana_dashboard="1")},
        "data": {"gpu-sharing-by-team.json": json.dumps(team_dashboard(plan), indent=1, sort_keys=True)},
    }


def monitoring_objects(plan: dict, namespace: str = "monitoring", namespace_label: str = "namespace",
                       queue_wait_seconds: int = 3600) -> list[dict]:
    return [prometheus_rule(plan, namespace, namespace_label, queue_wait_seconds), dashboard_configmap(plan, namespace)]
