"""Helm values, PrometheusRule and dashboard rendered from the Plan of every example inventory,
checked against upstream facts: the GPU Operator chart and docs (NVIDIA/gpu-operator,
NVIDIA/cloud-native-docs), the DRA driver chart (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1),
dcgm-exporter and Kueue v0.19.2, each cited where it is checked."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_monitoring
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render

from inventories import EXAMPLE_NAMES, load_example

PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}


@pytest.fixture(params=EXAMPLE_NAMES)
def plan(request):
    return copy.deepcopy(PLANS[request.param])


def test_examples_are_the_three_we_know():
    assert set(EXAMPLE_NAMES) >= {"four-gpu-server", "mixed-fleet", "microk8s-lab"}


# --- GPU Operator --------------------------------------------------------------------------

def test_gpu_operator_points_at_the_plan_configmaps(plan):
    values = render_helm.gpu_operator_values(plan)
    manifests = render(plan)
    names = {o["metadata"]["name"]: o for o in manifests["gpu_operator"]}
    assert values["migManager"]["config"]["name"] == "gpushare-mig-config"
    assert "gpushare-mig-config" in names
    assert values["migManager"]["config"]["create"] is False
    # migManager.config.default accepts only all-disabled or "" (kubebuilder enum in
    # NVIDIA/gpu-operator api/nvidia/v1/clusterpolicy_types.go)
    assert values["migManager"]["config"]["default"] in ("all-disabled", "")
    dp = values["devicePlugin"]["config"]
    assert dp == {"name": "gpushare-device-plugin-config", "create": False, "default": "default"}
    assert "default" in names[dp["name"]]["data"]
    assert "config.yaml" in names["gpushare-mig-config"]["data"]


def test_mig_strategy_matches_every_device_plugin_config(plan):
    strategy = render_helm.gpu_operator_values(plan)["mig"]["strategy"]
    for node in plan["nodes"] + [n for w in plan["windows"] for n in w["nodes"]]:
        if not node.get("device_plugin_config"):
            continue
        node_strategy = node["device_plugin_config"]["config"]["flags"]["migStrategy"]
        if any(g.get("mig") for g in node["gpus"]):
            assert node_strategy == strategy == "mixed"
        else:
            # no MIG device on the node: none and mixed advertise the same
            assert node_strategy in (strategy, "none")


def test_no_mig_anywhere_means_strategy_none():
    assert not render_helm.has_mig(PLANS["microk8s-lab"])
    assert render_helm.gpu_operator_values(PLANS["microk8s-lab"])["mig"]["strategy"] == "none"


@pytest.mark.parametrize("name", ["four-gpu-server", "mixed-fleet"])
def test_mig_strategy_mixed_when_any_node_has_mig(name):
    plan = PLANS[name]
    assert render_helm.has_mig(plan)
    assert render_helm.gpu_operator_values(plan)["mig"]["strategy"] == "mixed"


def test_mig_with_a_non_mixed_device_plugin_config_is_refused():
    plan = copy.deepcopy(PLANS["four-gpu-server"])
    plan["nodes"][0]["device_plugin_config"]["config"]["flags"]["migStrategy"] = "single"
    with pytest.raises(ValueError):
        render_helm.gpu_operator_values(plan)


def test_driver_disabled_only_when_every_node_has_a_host_driver(plan):
    values = render_helm.gpu_operator_values(plan)
    all_host = all(n["host_driver"] for n in plan["nodes"])
    assert values["driver"]["enabled"] is (not all_host)
    if not all_host:
        # nodes with a host driver opt out per node instead (label from the Plan)
        for node in plan["nodes"]:
            if node["host_driver"]:
                assert node["labels"]["nvidia.com/gpu.deploy.driver"] == "false"


def test_microk8s_lab_has_host_drivers_only():
    assert render_helm.gpu_operator_values(PLANS["microk8s-lab"])["driver"]["enabled"] is False
    assert render_helm.gpu_operator_values(PLANS["four-gpu-server"])["driver"]["enabled"] is True
    assert render_helm.gpu_operator_values(PLANS["mixed-fleet"])["driver"]["enabled"] is True


def test_microk8s_containerd_paths_in_toolkit_env():
    values = render_helm.gpu_operator_values(PLANS["microk8s-lab"])
    env = {e["name"]: e["value"] for e in values["toolkit"]["env"]}
    # NVIDIA/cloud-native-docs gpu-operator/getting-started.rst, "MicroK8s"
    assert env == {
        "CONTAINERD_CONFIG": "/var/snap/microk8s/current/args/containerd-template.toml",
        "CONTAINERD_SOCKET": "/var/snap/microk8s/common/run/containerd.sock",
        "RUNTIME_CONFIG_SOURCE": "file=/var/snap/microk8s/current/args/containerd.toml",
        "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED": "false",
    }
    assert all(isinstance(v, str) for v in env.values())


def test_microk8s_paths_from_the_role_facts_win():
    facts = {"containerd_socket": "/custom/containerd.sock", "containerd_config": ""}
    env = {e["name"]: e["value"] for e in render_helm.gpu_operator_values(PLANS["microk8s-lab"], facts)["toolkit"]["env"]}
    assert env["CONTAINERD_SOCKET"] == "/custom/containerd.sock"
    assert env["CONTAINERD_CONFIG"] == "/var/snap/microk8s/current/args/containerd-template.toml"


def test_kubeadm_keeps_the_operator_containerd_defaults():
    for name in ("four-gpu-server", "mixed-fleet"):
        env = render_helm.gpu_operator_values(PLANS[name])["toolkit"]["env"]
        assert not [e for e in env if e["name"].startswith(("CONTAINERD_", "RUNTIME_"))], env


def test_the_runtime_ignores_visible_devices_env_of_unprivileged_containers():
    # NVIDIA Container Toolkit: accept-nvidia-visible-devices-envvar-when-unprivileged = false
    # makes the runtime ignore NVIDIA_VISIBLE_DEVICES unless the container is privileged; the
    # operator passes toolkit.env to the toolkit container, which writes that setting.
    for name, plan in PLANS.items():
        env = render_helm.gpu_operator_values(plan)["toolkit"]["env"]
        assert {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"} in env, name


def test_kubelet_root_dir_only_from_26_7():
    lab = PLANS["microk8s-lab"]
    assert "hostPaths" not in render_helm.gpu_operator_values(lab, chart_version="v26.3.3")
    values = render_helm.gpu_operator_values(lab, chart_version="v26.7.0")
    assert values["hostPaths"]["kubeletRootDir"] == "/var/snap/microk8s/common/var/lib/kubelet"


def test_dcgm_exporter_service_monitor_keeps_pod_labels(plan):
    sm = render_helm.gpu_operator_values(plan)["dcgmExporter"]["serviceMonitor"]
    assert sm["enabled"] is True and sm["honorLabels"] is True
    assert render_helm.gpu_operator_values(plan, service_monitor=False)["dcgmExporter"]["serviceMonitor"]["enabled"] is False


def test_dra_nodes_evicted_by_the_driver_manager():
    values = render_helm.gpu_operator_values(PLANS["mixed-fleet"])
    assert {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"} in \
        values["driver"]["manager"]["env"]
    assert "manager" not in render_helm.gpu_operator_values(PLANS["four-gpu-server"])["driver"]


# --- DRA driver ----------------------------------------------------------------------------

def test_dra_driver_values_for_mixed_fleet():
    plan = PLANS["mixed-fleet"]
    values = render_helm.dra_driver_values(plan)
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"]["gpus"]["enabled"] is True
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    # h200-01 has no host driver: the operator's driver lives under /run/nvidia/driver
    # (nvidiaDriverRoot in the dra-driver-nvidia-gpu chart values.yaml)
    assert [n["host_driver"] for n in plan["nodes"] if n["dra"]] == [False]
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    # every DRA node carries the selector label, and no device plugin
    # (NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst)
    for node in plan["nodes"]:
        if node["dra"]:
            assert node["labels"]["nvidia.com/dra-kubelet-plugin"] == "true"
            assert node["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"


def test_dra_driver_root_with_host_driver():
    plan = copy.deepcopy(PLANS["mixed-fleet"])
    for node in plan["nodes"]:
        if node["dra"]:
            node["host_driver"] = True
    assert render_helm.dra_driver_values(plan)["nvidiaDriverRoot"] == "/"


def test_dra_driver_refused_without_dra_nodes():
    for name in ("four-gpu-server", "microk8s-lab"):
        assert not render_helm.dra_nodes(PLANS[name])
        with pytest.raises(ValueError):
            render_helm.dra_driver_values(PLANS[name])


# --- Kueue ---------------------------------------------------------------------------------

def test_kueue_values_embed_the_config_and_pin_the_image(plan):
    values = render_helm.kueue_values(plan)
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]) == kueue_config.kueue_manager_config(plan)
    assert values["controllerManager"]["manager"]["image"] == {
        "repository": "registry.k8s.io/kueue/kueue", "tag": "v0.19.2", "pullPolicy": "IfNotPresent"}
    assert values["fullnameOverride"] == "kueue"
    mirror = render_helm.kueue_values(plan, image={"repository": "mirror.local/kueue"})
    assert mirror["controllerManager"]["manager"]["image"]["repository"] == "mirror.local/kueue"
    assert mirror["controllerManager"]["manager"]["image"]["tag"] == "v0.19.2"


# --- kube-prometheus-stack -----------------------------------------------------------------

def test_kube_prometheus_values(plan):
    values = render_helm.kube_prometheus_values(plan)
    spec = values["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert spec["ruleSelectorNilUsesHelmValues"] is False
    allow = values["kube-state-metrics"]["metricLabelsAllowlist"]
    assert any(a.startswith("nodes=[") and "nvidia.com/mig.config.state" in a for a in allow)
    grafana = values["grafana"]
    assert grafana["admin"]["existingSecret"] and "adminPassword" not in grafana
    dcgm = grafana["dashboards"]["gpushare"]["nvidia-dcgm-exporter"]
    assert dcgm["gnetId"] == 12239
    provider = grafana["dashboardProviders"]["dashboardproviders.yaml"]["providers"][0]
    assert provider["name"] == "gpushare"


def test_dcgm_dashboard_from_a_mirror():
    values = render_helm.kube_prometheus_values(PLANS["four-gpu-server"],
                                                dcgm_dashboard={"url": "https://mirror.local/12239.json"})
    dcgm = values["grafana"]["dashboards"]["gpushare"]["nvidia-dcgm-exporter"]
    assert dcgm["url"] == "https://mirror.local/12239.json" and "gnetId" not in dcgm


# --- PrometheusRule and dashboard ----------------------------------------------------------

def _rules(plan):
    rule = render_monitoring.prometheus_rule(plan)
    return rule, [r for g in rule["spec"]["groups"] for r in g["rules"]]


def test_prometheus_rule_shape(plan):
    rule, rules = _rules(plan)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpushare.cluster"
    for r in rules:
        assert ("record" in r) != ("alert" in r)
        assert r["expr"].count("(") == r["expr"].count(")")
        assert r["expr"].count("{") == r["expr"].count("}")


def test_recording_rule_per_team_over_its_namespaces(plan):
    rules = _rules(plan)[1]
    for team in plan["teams"]:
        mine = [r for r in rules if r.get("labels", {}).get("team") == team["name"]]
        engine = [r for r in mine if r["record"] == "gpushare:team_gr_engine_active:avg"]
        assert len(engine) == 1
        # MIG slices report GR_ENGINE_ACTIVE, not *_UTIL (maintainers in NVIDIA/dcgm-exporter#216, #430)
        assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in engine[0]["expr"]
        assert 'namespace=~"%s"' % "|".join(team["namespaces"]) in engine[0]["expr"]
        usage = [r for r in mine if r["record"] == "gpushare:team_quota_usage:sum"]
        assert 'kueue_cluster_queue_resource_usage{cluster_queue="%s"' % team["cluster_queue"] in usage[0]["expr"]
    assert not any("_UTIL" in r["expr"] for r in rules if "record" in r)


def test_mixed_fleet_team_with_two_namespaces():
    rules = _rules(PLANS["mixed-fleet"])[1]
    prod = [r for r in rules if r.get("labels", {}).get("team") == "production"]
    assert all('namespace=~"prod-api|prod-batch"' in r["expr"] for r in prod
               if "DCGM" in r["expr"] and "_dra_node_" not in r["record"])


def test_exported_namespace_label_when_honor_labels_is_off():
    rule = render_monitoring.prometheus_rule(PLANS["four-gpu-server"], namespace_label="exported_namespace")
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert any('exported_namespace=~"prod-serving"' in e for e in exprs)


def test_alerts(plan):
    rules = _rules(plan)[1]
    alerts = {r["alert"]: r for r in rules if "alert" in r}
    # The XID gauge keeps the last XID: alert on a change, not on "> 0" for ever.
    assert "changes(DCGM_FI_DEV_XID_ERRORS[" in alerts["GpuXidError"]["expr"]
    assert 'label_nvidia_com_mig_config_state="failed"' in alerts["GpuMigConfigFailed"]["expr"]
    assert "kueue_admission_wait_time_seconds_bucket" in alerts["KueueLongQueueWait"]["expr"]
    assert "kueue_pending_workloads" in alerts["KueueWorkloadsPendingLong"]["expr"]


def test_dashboard(plan):
    cm = render_monitoring.dashboard_configmap(plan)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(cm["data"]["gpu-sharing-by-team.json"])
    assert board["title"] == "GPU sharing by team" and board["uid"] == "gpushare-by-team"
    exprs = " ".join(t["expr"] for p in board["panels"] for t in p["targets"])
    for metric in ("gpushare:team_admission_wait_seconds:p90", "gpushare:team_quota_usage:ratio",
                   "gpushare:team_borrowed:sum", "gpushare:team_gr_engine_active:avg"):
        assert metric in exprs
    team_var = next(v for v in board["templating"]["list"] if v["name"] == "team")
    assert team_var["query"].split(",") == [t["name"] for t in plan["teams"]]
    text = board["panels"][0]["options"]["content"]
    for team in plan["teams"]:
        assert team["name"] in text
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))


def test_recorded_series_used_by_the_dashboard_exist(plan):
    rules = _rules(plan)[1]
    recorded = {r["record"] for r in rules if "record" in r}
    board = render_monitoring.team_dashboard(plan)
    used = set()
    for p in board["panels"]:
        for t in p["targets"]:
            used |= {tok for tok in t["expr"].replace("{", " ").replace("(", " ").split() if tok.startswith("gpushare:")}
    assert used and used <= recorded


def test_bad_namespace_refused():
    plan = copy.deepcopy(PLANS["four-gpu-server"])
    plan["teams"][0]["namespaces"] = ['a"b']
    with pytest.raises(ValueError):
        render_monitoring.prometheus_rule(plan)


def test_config_hash_is_stable_and_order_free():
    assert render_helm.config_hash({"a": 1, "b": 2}) == render_helm.config_hash({"b": 2, "a": 1})
    assert render_helm.config_hash({"a": 1}) != render_helm.config_hash({"a": 2})
