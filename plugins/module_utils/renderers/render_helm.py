# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to the Helm values of the GPU stack: GPU Operator, DRA driver, Kueue, kube-prometheus-stack.

Pure functions of the Plan (and, for the GPU Operator, of the container runtime paths the
Kubernetes roles recorded). The roles pass the result to ``kubernetes.core.helm``; nothing
here talks to a cluster. Facts and their sources: the NVIDIA GPU Operator docs
(NVIDIA/cloud-native-docs ``gpu-operator/*.rst``) and chart ``values.yaml``, the DRA Driver for
NVIDIA GPUs chart and docs (kubernetes-sigs/dra-driver-nvidia-gpu), each cited where used, and
the Kueue v0.19.2 chart (``charts/kueue``).
"""

from __future__ import annotations

import hashlib
import json

try:
    import yaml
except ImportError:     # ansible-core depends on PyYAML; this only keeps `import` sanity quiet
    yaml = None

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import sharing_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.kueue_config import kueue_manager_config

# NVIDIA/cloud-native-docs gpu-operator/getting-started.rst, "MicroK8s"; the microk8s
# role records the same paths as facts (microk8s_runtime_paths).
MICROK8S_RUNTIME_PATHS = {
    "containerd_config": "/var/snap/microk8s/current/args/containerd-template.toml",
    "containerd_socket": "/var/snap/microk8s/common/run/containerd.sock",
    "runtime_config_source": "file=/var/snap/microk8s/current/args/containerd.toml",
    "kubelet_root_dir": "/var/snap/microk8s/common/var/lib/kubelet",
}
DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"
# The DRA kubelet plugin's driver root with a host driver / an operator-managed driver
# (nvidiaDriverRoot in the dra-driver-nvidia-gpu chart values.yaml, v0.4.1).
HOST_DRIVER_ROOT = "/"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"

GRAFANA_DASHBOARD_DIR = "/var/lib/grafana/dashboards/gpushare"


def config_hash(data) -> str:
    """Stable short hash of a ConfigMap's data (or any JSON value), for restart annotations."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _version_tuple(version: str) -> tuple:
    parts = []
    for part in str(version).lstrip("v").split("-", maxsplit=1)[0].split("."):
        parts.append(int(part) if part.isdigit() else 0)
    return tuple(parts)


def _all_node_states(plan: dict) -> list[dict]:
    """The nodes as planned now and in every sharing window."""
    nodes = list(plan["nodes"])
    for window in plan.get("windows", []):
        nodes.extend(window["nodes"])
    return nodes


def has_mig(plan: dict) -> bool:
    return any(sharing_planner.has_mig(node["gpus"]) for node in _all_node_states(plan))


def mig_strategy(plan: dict) -> str:
    """ClusterPolicy mig.strategy (decided by sharing_planner.cluster_mig_strategy), checked
    against the device-plugin configs (GPU Operator gpu-operator-mig.rst;
    NVIDIA/k8s-device-plugin README, "MIG strategies").

    The operator sets MIG_STRATEGY on the device plugin and an env beats the config file, so
    the config of every node with MIG must say the same. Nodes without MIG may say none: on a
    node with no MIG device mixed and none advertise the same (whole GPUs as nvidia.com/gpu).
    """
    strategy = sharing_planner.cluster_mig_strategy(_all_node_states(plan))
    for node in _all_node_states(plan):
        config = (node.get("device_plugin_config") or {}).get("config") or {}
        node_strategy = (config.get("flags") or {}).get("migStrategy", "none")
        if sharing_planner.has_mig(node["gpus"]) and node_strategy != strategy:
            raise ValueError("node %s has MIG slices but its device-plugin config %s uses migStrategy %s, "
                             "not %s" % (node["name"], node["device_plugin_config"]["name"], node_strategy, strategy))
        if node_strategy not in (strategy, "none"):
            raise ValueError("node %s: device-plugin migStrategy %s but the cluster uses %s"
                             % (node["name"], node_strategy, strategy))
    return strategy


def dra_nodes(plan: dict) -> list[dict]:
    listed = set(plan.get("dra", {}).get("nodes", []))
    return [n for n in plan["nodes"] if n["name"] in listed or n.get("dra")]


def operator_manages_driver(plan: dict) -> bool:
    """driver.enabled: false only when every GPU node has a host driver (GPU Operator chart
    values.yaml, driver.enabled)."""
    return not all(node["host_driver"] for node in plan["nodes"])


def runtime_paths(plan: dict, distribution_facts: dict | None = None) -> dict:
    """Container runtime paths for the toolkit: the facts the Kubernetes roles recorded,
    else the distribution's known paths (MicroK8s), else {} (the operator's defaults)."""
    facts = {k: v for k, v in (distribution_facts or {}).items() if v}
    if plan["cluster"]["kubernetes_distribution"] == "microk8s":
        return dict(MICROK8S_RUNTIME_PATHS, **facts)
    return facts


def dcgm_resource_names(plan: dict) -> list[str]:
    """Every device-plugin resource the Plan (or one of its windows) advertises. dcgm-exporter
    adds pod labels only for nvidia.com/gpu, nvidia.com/mig-* and the names in
    NVIDIA_RESOURCE_NAMES (internal/pkg/transformation/kubernetes.go, 4.5-4.8), so a
    time-sliced nvidia.com/gpu.shared GPU has no namespace unless it is listed; all are listed,
    so attribution does not depend on how the exporter merges the list with its defaults."""
    resources = set()
    for nodes in [plan["nodes"]] + [w["nodes"] for w in plan.get("windows", [])]:
        for node in nodes:
            resources.update(node.get("advertised") or {})
    return sorted(resources)


def gpu_operator_values(plan: dict, distribution_facts: dict | None = None,
                        chart_version: str = names.VERSIONS["gpu-operator"],
                        service_monitor: bool = True, nfd: bool = True) -> dict:
    """Values for the nvidia/gpu-operator chart: its values.yaml (v26.3.3 / v26.7.0) and the
    NVIDIA/cloud-native-docs pages gpu-operator-mig.rst, gpu-sharing.rst, getting-started.rst
    and dra-intro-install.rst."""
    values = {
        "driver": {"enabled": operator_manages_driver(plan)},
        "toolkit": {"enabled": True},
        "mig": {"strategy": mig_strategy(plan)},
        # The role applies the ConfigMaps (render_manifests: every node's layout, windows
        # included) before the chart; the node label names.MIG_CONFIG_LABEL picks the layout per node.
        "migManager": {"enabled": True, "config": {"name": names.MIG_CONFIGMAP, "create": False,
                                                   "default": names.MIG_DISABLED_CONFIG}},
        "devicePlugin": {"enabled": True, "config": {"name": names.DEVICE_PLUGIN_CONFIGMAP, "create": False,
                                                     "default": names.DEVICE_PLUGIN_DEFAULT_CONFIG}},
        "gfd": {"enabled": True},
        "nfd": {"enabled": nfd},
        "dcgmExporter": {"enabled": True, "serviceMonitor": {
            # honorLabels keeps the exporter's pod/namespace/container labels instead of
            # renaming them exported_* (gpu-operator #2938).
            "enabled": service_monitor, "honorLabels": True, "interval": "15s", "additionalLabels": {}}},
    }
    resource_names = dcgm_resource_names(plan)
    if resource_names:
        values["dcgmExporter"]["env"] = [{"name": "NVIDIA_RESOURCE_NAMES", "value": ",".join(resource_names)}]
    paths = runtime_paths(plan, distribution_facts)
    env = []
    for name, key in (("CONTAINERD_CONFIG", "containerd_config"), ("CONTAINERD_SOCKET", "containerd_socket"),
                      ("RUNTIME_CONFIG_SOURCE", "runtime_config_source")):
        if paths.get(key):
            env.append({"name": name, "value": str(paths[key])})
    if env:
        values["toolkit"]["env"] = env
    kubelet_root = paths.get("kubelet_root_dir")
    if kubelet_root and kubelet_root != DEFAULT_KUBELET_ROOT and _version_tuple(chart_version) >= (26, 7):
        # hostPaths.kubeletRootDir exists from 26.7.0; before that MicroK8s' /var/lib/kubelet
        # symlink (made by the snap's install hook when the path is free, canonical/microk8s)
        # serves the same purpose.
        values["hostPaths"] = {"kubeletRootDir": kubelet_root}
    if dra_nodes(plan) and values["driver"]["enabled"]:
        # The driver manager also evicts the DRA kubelet plugin before a driver upgrade
        # (NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst).
        values["driver"]["manager"] = {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": names.DRA_NODE_LABEL}]}
    return values


def dra_driver_values(plan: dict, distribution_facts: dict | None = None, compute_domains: bool = False) -> dict:
    """Values for the DRA driver chart dra-driver-nvidia-gpu 0.4.x (its values.yaml, v0.4.1, and
    NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst)."""
    nodes = dra_nodes(plan)
    if not nodes:
        raise ValueError("the Plan has no DRA nodes; the DRA driver is not installed")
    roots = {HOST_DRIVER_ROOT if n["host_driver"] else OPERATOR_DRIVER_ROOT for n in nodes}
    if len(roots) != 1:
        raise ValueError("DRA nodes mix host and operator drivers (%s); one kubelet plugin DaemonSet "
                         "has one nvidiaDriverRoot" % ", ".join(n["name"] for n in nodes))
    values = {
        "nvidiaDriverRoot": roots.pop(),
        # The device plugin keeps serving the other nodes; the Plan opts DRA nodes out of it
        # (nvidia.com/gpu.deploy.device-plugin=false), so this override is safe.
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": compute_domains}},
        "kubeletPlugin": {
            "nodeSelector": {names.DRA_NODE_LABEL: "true"},
            "tolerations": [dict(names.GPU_TOLERATION)],
        },
    }
    kubelet_root = runtime_paths(plan, distribution_facts).get("kubelet_root_dir")
    if kubelet_root and kubelet_root != DEFAULT_KUBELET_ROOT:
        values["kubeletPlugin"]["kubeletRegistrarDirectoryPath"] = kubelet_root + "/plugins_registry"
        values["kubeletPlugin"]["kubeletPluginsDirectoryPath"] = kubelet_root + "/plugins"
    return values


def kueue_values(plan: dict, image: dict | None = None, enable_prometheus: bool = False,
                 prometheus_namespace: str = names.MONITORING_NAMESPACE, cluster_queue_metrics: bool = True) -> dict:
    """Values for the Kueue chart (charts/kueue at v0.19.2). The chart stamps a checksum of
    its manager ConfigMap on the pod template, so a changed config rolls the controller."""
    return {
        "fullnameOverride": names.KUEUE_FULLNAME,
        "enablePrometheus": enable_prometheus,
        "metrics": {"prometheusNamespace": prometheus_namespace},
        "controllerManager": {"manager": {"image": dict(names.KUEUE_IMAGE, **(image or {}))}},
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(
            kueue_manager_config(plan, cluster_queue_metrics), sort_keys=False)},
    }


def kube_prometheus_values(plan: dict, grafana_admin_secret: str = names.GRAFANA_ADMIN_SECRET,
                           dcgm_dashboard: dict | None = None, ksm_node_labels: list | None = None,
                           retention: str = "30d", retention_size: str = "", storage_size: str = "") -> dict:
    """Values for kube-prometheus-stack: every ServiceMonitor/PrometheusRule selected (the DCGM
    exporter's and Kueue's come from other releases), node labels for the MIG alert, Grafana
    with an existing admin Secret and the DCGM dashboard (grafana.com 12239 by gnetId, or a
    mirror URL for air-gapped sites)."""
    dashboard = {"gnetId": 12239, "revision": 2, "datasource": "Prometheus"}
    dashboard.update(dcgm_dashboard or {})
    if dashboard.get("url"):
        dashboard.pop("gnetId", None)
        dashboard.pop("revision", None)
    labels = ksm_node_labels or names.KSM_NODE_LABELS
    # Weeks of history for the usage advisor (the chart keeps 10d); without a volume the
    # history lives in an emptyDir and is lost when the pod moves.
    spec = {
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "serviceMonitorNamespaceSelector": {},
        "ruleNamespaceSelector": {},
        "retention": retention,
    }
    if retention_size:
        spec["retentionSize"] = retention_size
    if storage_size:
        spec["storageSpec"] = {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage_size}}}}}
    return {
        "prometheus": {"prometheusSpec": spec},
        "kube-state-metrics": {"metricLabelsAllowlist": [
            "nodes=[%s]" % ",".join(labels), "namespaces=[%s]" % names.TEAM_LABEL]},
        "grafana": {
            "admin": {"existingSecret": grafana_admin_secret, "userKey": "admin-user", "passwordKey": "admin-password"},
            "dashboardProviders": {"dashboardproviders.yaml": {"apiVersion": 1, "providers": [{
                "name": "gpushare", "orgId": 1, "folder": "GPU", "type": "file", "disableDeletion": False,
                "editable": False, "options": {"path": GRAFANA_DASHBOARD_DIR}}]}},
            "dashboards": {"gpushare": {"nvidia-dcgm-exporter": dashboard}},
            # Our own dashboard is a ConfigMap the role applies; the sidecar loads it.
            "sidecar": {"dashboards": {"enabled": True, "label": names.GRAFANA_DASHBOARD_LABEL,
                                       "labelValue": names.GRAFANA_DASHBOARD_LABEL_VALUE,
                                       "searchNamespace": "ALL"}},
        },
    }


def dra_mig_layout_hash(plan: dict) -> str:
    """Hash of the DRA nodes' MIG layouts: static MIG partitions are only seen by the DRA
    kubelet plugin after it restarts (dra-intro-install.rst, known issues: "Restart the DRA
    driver pod to discover MIG devices created by the GPU Operator MIG Manager")."""
    return config_hash({n["name"]: n.get("mig_config") for n in dra_nodes(plan)})
