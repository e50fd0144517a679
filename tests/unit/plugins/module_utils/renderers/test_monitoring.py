# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring the roles deploy sees every team's GPUs: rules and dashboard rendered from
every example Plan, checked against how dcgm-exporter 4.5-4.8 labels its series (pod labels
only for listed resources, exported_* with honorLabels false, MIG activity relative to the
instance, no pod labels on DRA GPUs, a last-XID gauge). tests/suites/55-prometheus.sh runs the
same rules in a real Prometheus."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_manifests, render_monitoring
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLE_NAMES, load_example

from inventories import ROOT  # noqa: E402
PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}


@pytest.fixture(params=EXAMPLE_NAMES)
def plan(request):
    return copy.deepcopy(PLANS[request.param])


def _rules(plan, **kw):
    groups = render_monitoring.prometheus_rule(plan, **kw)["spec"]["groups"]
    return [r for g in groups for r in g["rules"]]


def _records(plan, **kw):
    return [r for r in _rules(plan, **kw) if "record" in r]


def test_every_recorded_series_names_its_team_and_reads_only_raw_series(plan):
    teams = {t["name"] for t in plan["teams"]}
    for r in _records(plan):
        assert r["labels"]["team"] in teams
        # promtool can backfill and test each rule alone: no rule reads another's output
        assert "gpushare:" not in r["expr"], r["record"]


def test_each_team_has_every_rule_once(plan):
    names = {r["record"] for r in _records(plan) if "_dra_node_" not in r["record"]}
    for team in plan["teams"]:
        mine = [r["record"] for r in _records(plan) if r["labels"]["team"] == team["name"] and "_dra_node_" not in r["record"]]
        assert sorted(mine) == sorted(names)


def test_auto_namespace_label_reads_both_honor_labels_settings(plan):
    for r in _records(plan):
        if "DCGM_FI" in r["expr"] and "_dra_node_" not in r["record"]:
            ns = render_monitoring.namespace_regex(next(t for t in plan["teams"] if t["name"] == r["labels"]["team"])["namespaces"])
            assert '{namespace=~"%s"' % ns in r["expr"] and '{exported_namespace=~"%s"' % ns in r["expr"]
    only = _records(plan, namespace_label="exported_namespace")
    assert not any('{namespace=~"' in r["expr"] for r in only)


def test_unknown_namespace_label_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="exported_namespace"):
        render_monitoring.prometheus_rule(PLANS["four-gpu-server"], namespace_label="ns")


def test_time_sliced_copies_collapse_to_one_series_per_device(plan):
    for r in _records(plan):
        if "DCGM_FI" in r["expr"]:
            assert "UUID, GPU_I_ID, GPU_I_PROFILE, modelName) (" in r["expr"] and "max by (" in r["expr"]


def test_busy_gpus_weigh_mig_instances_by_their_share_of_the_card():
    rules = _records(PLANS["four-gpu-server"])
    busy = next(r["expr"] for r in rules if r["record"] == "gpushare:team_gpu_busy:sum")
    for product, profile, g, full in render_monitoring.mig_profiles(PLANS["four-gpu-server"]):
        assert product == "NVIDIA H200" and full == 7
        assert re.search(r'GPU_I_PROFILE="%s", modelName="NVIDIA H200"\}\)\) \* %d / 7' % (re.escape(profile), g), busy)
    assert 'GPU_I_PROFILE=""' in busy          # whole GPUs count 1


def test_dra_gpus_are_shown_per_node_for_teams_with_dra_quota():
    plan = PLANS["mixed-fleet"]
    dra = [r for r in _records(plan) if "_dra_node_" in r["record"]]
    assert {r["labels"]["team"] for r in dra} == {"production", "research"}
    for r in dra:
        assert 'Hostname=~"h200-01"' in r["expr"] and 'hostname=~"h200-01"' in r["expr"] and "by (node)" in r["expr"]
    assert not [r for r in _records(PLANS["four-gpu-server"]) if "_dra_node_" in r["record"]]
    board = render_monitoring.team_dashboard(plan)
    assert any("gpushare:team_dra_node_gr_engine_active:avg" in t["expr"] for p in board["panels"] for t in p["targets"])


def test_xid_alert_fires_on_a_change_not_for_ever():
    xid = next(r for r in render_monitoring.alert_rules() if r["alert"] == "GpuXidError")
    assert "changes(DCGM_FI_DEV_XID_ERRORS[15m]) > 0" in xid["expr"] and "!= 0" in xid["expr"]
    assert "for" not in xid             # a window, not a duration the condition must hold


def test_every_dashboard_panel_follows_the_team_variable(plan):
    board = render_monitoring.team_dashboard(plan)
    for panel in board["panels"]:
        if panel["type"] == "text":
            continue
        for target in panel["targets"]:
            assert 'team=~"$team"' in target["expr"], (panel["title"], target["expr"])


def test_memory_panel_is_in_mebibytes():
    board = render_monitoring.team_dashboard(PLANS["four-gpu-server"])
    memory = next(p for p in board["panels"] if "memory" in p["title"].lower())
    assert memory["fieldConfig"]["defaults"]["unit"] == "mbytes"        # Grafana's MiB; decmbytes is SI MB


def test_kueue_configuration_manifest_is_what_the_kueue_role_applies(plan):
    files = {f["path"]: f["content"] for f in render_manifests.manifest_files(plan)}
    manifest = yaml.safe_load(files["kueue-configuration.yaml"])
    assert manifest == kueue_config.kueue_manager_config(plan)
    assert manifest["metrics"]["enableClusterQueueResources"] is True


def test_role_defaults_match_the_renderers():
    defaults = yaml.safe_load((ROOT / "roles/monitoring/defaults/main.yml").read_text())
    specs = yaml.safe_load((ROOT / "roles/monitoring/meta/argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert defaults["monitoring_dcgm_namespace_label"] == "auto"
    assert set(specs["monitoring_dcgm_namespace_label"]["choices"]) == set(render_monitoring.NAMESPACE_LABEL_CHOICES)
    for name in ("monitoring_prometheus_retention", "monitoring_prometheus_retention_size", "monitoring_prometheus_storage_size"):
        assert defaults[name] == specs[name]["default"]
    values = render_helm.kube_prometheus_values(PLANS["four-gpu-server"], retention=defaults["monitoring_prometheus_retention"])
    assert values == render_helm.kube_prometheus_values(PLANS["four-gpu-server"])


def test_rules_unit_tests_cover_every_rule_and_alert():
    """tests/prometheus/rules_test_*.yml (run by promtool test rules in 55-prometheus) name
    every recording rule and alert of the inventories they load."""
    covered_records, covered_alerts = set(), set()
    for f in sorted((ROOT / "tests/prometheus").glob("rules_test_*.yml")):
        doc = yaml.safe_load(f.read_text())
        for test in doc["tests"]:
            for e in test.get("promql_expr_test", []):
                covered_records |= set(re.findall(r"gpushare:[a-z_]+:[a-z0-9]+", e["expr"]))
            for a in test.get("alert_rule_test", []):
                covered_alerts.add(a["alertname"])
    records = {r["record"] for name in ("four-gpu-server", "mixed-fleet") for r in _records(PLANS[name])}
    alerts = {r["alert"] for r in render_monitoring.alert_rules()}
    assert records <= covered_records, sorted(records - covered_records)
    assert alerts <= covered_alerts, sorted(alerts - covered_alerts)


def test_dcgm_exporter_attributes_every_planned_resource(plan):
    """dcgm-exporter labels pods only for nvidia.com/gpu, nvidia.com/mig-* and NVIDIA_RESOURCE_NAMES."""
    env = {e["name"]: e["value"] for e in render_helm.gpu_operator_values(plan)["dcgmExporter"].get("env", [])}
    advertised = {r for nodes in [plan["nodes"]] + [w["nodes"] for w in plan["windows"]] for n in nodes
                  for r in n["advertised"]}
    assert set(env["NVIDIA_RESOURCE_NAMES"].split(",")) == advertised


def test_mixed_fleet_time_sliced_l40s_is_attributed():
    env = {e["name"]: e["value"] for e in render_helm.gpu_operator_values(PLANS["mixed-fleet"])["dcgmExporter"]["env"]}
    assert "nvidia.com/gpu.shared" in env["NVIDIA_RESOURCE_NAMES"].split(",")


def test_prometheus_retention_for_the_advisor():
    spec = render_helm.kube_prometheus_values(PLANS["four-gpu-server"])["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d" and "storageSpec" not in spec and "retentionSize" not in spec
    spec = render_helm.kube_prometheus_values(PLANS["four-gpu-server"], retention="60d", retention_size="90GB",
                                              storage_size="100Gi")["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "60d" and spec["retentionSize"] == "90GB"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "100Gi"
