# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to the Helm values of the GPU stack: GPU Operator, DRA driver, Kueue, kube-prometheus-stack.

Pure functions of the Plan (and, for the GPU Operator and the DRA driver, of the container
runtime paths of the fact gpushare_distribution). The roles pass the result to
``kubernetes.core.helm``; nothing here talks to a cluster. Facts and their sources: the NVIDIA GPU Operator docs
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

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions
from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import sharing_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.kueue_config import kueue_manager_config

# The GPU Operator's and the DRA driver's kubelet root (each distribution's is in the
# distributions table, inventory/distributions.py).
DEFAULT_KUBELET_ROOT = "/var/lib/kubelet"
# The DRA kubelet plugin's driver root with a host driver / an operator-managed driver
# (nvidiaDriverRoot in the dra-driver-nvidia-gpu chart values.yaml, v0.4.1).
HOST_DRIVER_ROOT = "/"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"

GRAFANA_DASHBOARD_DIR = "/var/lib/grafana/dashboards/gpushare"


def config_hash(data) -> str:
    """Stable short hash of a ConfigMap's data (or any JSON value), for restart annotations.

    Args:
        data: any JSON value, usually a ConfigMap's ``data`` dict or a configuration text; keys
            are sorted first, so their order does not change the hash.

    Returns:
        The first 16 hex digits of the SHA-256 of its JSON, a string.
    """
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
    """Container runtime paths for the toolkit: the runtime paths of the fact
    gpushare_distribution (``distribution_facts``; empty ones left out) over those the Plan's
    distribution always needs (``distributions.assumed_runtime``: MicroK8s' paths; none where
    they are the operator's defaults, kubeadm)."""
    facts = {k: v for k, v in (distribution_facts or {}).items() if v}
    return dict(distributions.assumed_runtime(plan["cluster"]["kubernetes_distribution"]), **facts)


def dcgm_resource_names(plan: dict) -> list[str]:
    """Every device-plugin resource the Plan (or one of its windows) advertises (the Plan's
    ``admission.gpu_resources``). dcgm-exporter adds pod labels only for nvidia.com/gpu,
    nvidia.com/mig-* and the names in NVIDIA_RESOURCE_NAMES
    (internal/pkg/transformation/kubernetes.go, 4.5-4.8), so a time-sliced
    nvidia.com/gpu.shared GPU has no namespace unless it is listed; all are listed, so
    attribution does not depend on how the exporter merges the list with its defaults."""
    return list(plan["admission"]["gpu_resources"])


def gpu_operator_values(plan: dict, distribution_facts: dict | None = None,
                        chart_version: str = names.VERSIONS["gpu-operator"],
                        service_monitor: bool = True, nfd: bool = True) -> dict:
    """Values for the nvidia/gpu-operator chart, from the Plan.

    After the chart's values.yaml (v26.3.3 / v26.7.0) and the NVIDIA/cloud-native-docs pages
    gpu-operator-mig.rst, gpu-sharing.rst, getting-started.rst and dra-intro-install.rst: the
    driver unless the host has one, the MIG strategy, MIG Manager and device plugin reading the
    ConfigMaps the role applies, DCGM exporter and its ServiceMonitor, the toolkit's runtime paths.

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        distribution_facts: the container runtime paths the Kubernetes roles recorded, a dict
            with any of ``containerd_config``, ``containerd_socket``, ``runtime_config_source``
            and ``kubelet_root_dir``; empty values are left out, and on MicroK8s its known paths
            fill in the rest. Empty or none: the operator's defaults.
        chart_version: the gpu-operator chart version the values are for, e.g. ``v26.3.3``; a
            kubelet root other than /var/lib/kubelet is only set (``hostPaths.kubeletRootDir``)
            from v26.7.0.
        service_monitor: whether the DCGM exporter gets a ServiceMonitor (its CRD must exist).
        nfd: whether the chart deploys Node Feature Discovery.

    Returns:
        The chart values, a dict (the role merges its image settings and overrides over them).
    """
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
    # The runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers (a CUDA image sets
    # it to "all"), so only the device plugin and DRA hand out GPUs: they pass devices through
    # CDI, on by default since v25.10 (cdi.enabled), not through this variable.
    env = [{"name": names.TOOLKIT_UNPRIVILEGED_ENV_SETTING, "value": "false"}]
    for name, key in (("CONTAINERD_CONFIG", "containerd_config"), ("CONTAINERD_SOCKET", "containerd_socket"),
                      ("RUNTIME_CONFIG_SOURCE", "runtime_config_source")):
        if paths.get(key):
            env.append({"name": name, "value": str(paths[key])})
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
    """Values for the DRA driver chart dra-driver-nvidia-gpu 0.4.x, from the Plan.

    After its values.yaml (v0.4.1) and NVIDIA/cloud-native-docs gpu-operator/dra-intro-install.rst:
    the kubelet plugin runs on the Plan's DRA nodes only, with their driver's root (host or GPU
    Operator).

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict. It must have
            DRA nodes, all with the same kind of driver (host or GPU Operator); otherwise the
            filter fails saying which.
        distribution_facts: the container runtime paths the Kubernetes roles recorded (as for
            ``gpu_operator_values``); a kubelet root other than /var/lib/kubelet moves the
            plugin's registrar and plugins directories.
        compute_domains: whether the driver also serves ComputeDomains (multi-node NVLink).

    Returns:
        The chart values, a dict.
    """
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
    gates = plan.get("dra", {}).get("feature_gates")
    if gates:
        # DynamicMIG, and the gates it cannot run beside, off (the Plan's dra.feature_gates;
        # the chart's featureGates, values.yaml v0.4.1).
        values["featureGates"] = dict(gates)
    kubelet_root = runtime_paths(plan, distribution_facts).get("kubelet_root_dir")
    if kubelet_root and kubelet_root != DEFAULT_KUBELET_ROOT:
        values["kubeletPlugin"]["kubeletRegistrarDirectoryPath"] = kubelet_root + "/plugins_registry"
        values["kubeletPlugin"]["kubeletPluginsDirectoryPath"] = kubelet_root + "/plugins"
    return values


def kueue_values(plan: dict, image: dict | None = None, enable_prometheus: bool = False,
                 prometheus_namespace: str = names.MONITORING_NAMESPACE, cluster_queue_metrics: bool = True) -> dict:
    """Values for the Kueue chart (charts/kueue at v0.19.2), from the Plan.

    The manager configuration is the Plan's (``kueue_manager_config_yaml``). The chart stamps a
    checksum of its manager ConfigMap on the pod template, so a changed config rolls the
    controller.

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        image: overrides of the controller image, a dict with any of ``repository``, ``tag`` and
            ``pullPolicy``; empty or none keeps registry.k8s.io/kueue/kueue at the pinned version.
        enable_prometheus: whether the chart creates Kueue's ServiceMonitor (its CRD must exist).
        prometheus_namespace: namespace of the Prometheus that scrapes Kueue (the chart's metrics
            RoleBinding).
        cluster_queue_metrics: whether Kueue exports the ClusterQueue resource metrics
            (``metrics.enableClusterQueueResources``; the team dashboard needs them).

    Returns:
        The chart values, a dict.
    """
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
    """Values for the kube-prometheus-stack chart.

    Every ServiceMonitor/PrometheusRule is selected (the DCGM exporter's and Kueue's come from
    other releases), kube-state-metrics exports the node labels of the MIG alert and the team
    label of namespaces, Grafana uses an existing admin Secret and loads the DCGM dashboard
    (grafana.com 12239 by gnetId, or a mirror URL for air-gapped sites) and the team dashboard
    ConfigMap (its sidecar).

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict. The values do
            not depend on it today; it is the input as for the other charts' values.
        grafana_admin_secret: name of the existing Secret holding Grafana's admin user and password
            (keys ``admin-user`` and ``admin-password``).
        dcgm_dashboard: the Grafana chart's dashboard entry for the DCGM exporter dashboard, a dict
            merged over ``{gnetId: 12239, revision: 2, datasource: Prometheus}``; with ``url`` (a
            mirror) gnetId and revision are dropped.
        ksm_node_labels: the node labels kube-state-metrics exports, a list of label keys; empty or
            none gives those the MIG alert needs (nvidia.com/mig.config, nvidia.com/mig.config.state,
            gpushare.cluster/gpu-model).
        retention: how long Prometheus keeps samples, e.g. ``30d``.
        retention_size: the most disk Prometheus' samples take, e.g. ``50GB``; empty for no limit.
        storage_size: size of a PersistentVolumeClaim for Prometheus' data, e.g. ``100Gi``; empty
            keeps the data in an emptyDir (lost when the pod moves).

    Returns:
        The chart values, a dict.
    """
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
    """Hash of the DRA nodes' MIG layouts, to restart the DRA kubelet plugin on a change.

    Static MIG partitions are only seen by the DRA kubelet plugin after it restarts
    (dra-intro-install.rst, known issues: "Restart the DRA driver pod to discover MIG devices
    created by the GPU Operator MIG Manager").

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.

    Returns:
        The ``config_hash`` of each DRA node's name and MIG configuration name, a string of 16 hex
        digits.
    """
    return config_hash({n["name"]: n.get("mig_config") for n in dra_nodes(plan)})
