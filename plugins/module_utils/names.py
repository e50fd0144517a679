# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every Kubernetes name, label, annotation, resource name, field manager and default
namespace the collection writes or reads, and every chart and image version it pins: defined
once here. The planners and renderers import them; the roles read them through the filters
``k8s_name``, ``pinned_version`` and ``managed_label`` (role defaults, as Kubespray's
kubespray_defaults). tests/unit/test_names_defined_once.py fails when one is written again
elsewhere."""

from __future__ import annotations

# --- Ownership -------------------------------------------------------------------------------

MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpushare.cluster"
# The label on every object the collection applies; pruning lists only objects carrying it.
MANAGED_LABEL = {MANAGED_BY_KEY: MANAGED_BY_VALUE}
# The same as a label selector (kubectl -l, k8s_info label_selectors).
MANAGED_SELECTOR = "%s=%s" % (MANAGED_BY_KEY, MANAGED_BY_VALUE)
# Server-side apply field manager of every object the roles apply. Live objects record it in
# managedFields: a new name would leave the old one co-owning (and never removing) fields.
FIELD_MANAGER = "gpushare"

# --- Default namespaces ------------------------------------------------------------------------

GPU_OPERATOR_NAMESPACE = "gpu-operator"
DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"
KUEUE_NAMESPACE = "kueue-system"
MONITORING_NAMESPACE = "monitoring"

# --- Node labels the Plan sets ---------------------------------------------------------------

# The GPU model, the node selector of the Kueue ResourceFlavors.
GPU_MODEL_LABEL = "gpushare.cluster/gpu-model"
# The MIG Manager applies the layout this label names and reports in the state label
# (pending, success, failed).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
# The device plugin's config (a key of DEVICE_PLUGIN_CONFIGMAP) for this node.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# GPU Operator operands switched off per node (host driver; DRA instead of the device plugin).
DEPLOY_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"
DEPLOY_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# Nodes the DRA kubelet plugin runs on.
DRA_NODE_LABEL = "nvidia.com/dra-kubelet-plugin"
# The GPU Operator's MIG Manager runs where this is "true" (gpu-operator controllers/state_manager.go,
# migManagerLabelKey); "false" leaves a node's MIG to the DRA driver (mode mig-dynamic).
DEPLOY_MIG_MANAGER_LABEL = "nvidia.com/gpu.deploy.mig-manager"
# Every node label key the Plan can set: a node patched before MANAGED_LABELS_ANNOTATION
# existed has these removed when the Plan drops them.
PLAN_LABEL_KEYS = (GPU_MODEL_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, MIG_CONFIG_LABEL,
                   DEPLOY_DRIVER_LABEL, DEPLOY_DEVICE_PLUGIN_LABEL, DRA_NODE_LABEL, DEPLOY_MIG_MANAGER_LABEL)
# Kube-state-metrics exports these node labels for the MIG alert (kube_node_labels).
KSM_NODE_LABELS = (MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, GPU_MODEL_LABEL)
# The team a namespace belongs to (namespace label, exported by kube-state-metrics too).
TEAM_LABEL = "gpushare.cluster/team"

# --- Annotations -------------------------------------------------------------------------------

# Node: the label keys the last patch set, so the next one removes those the Plan dropped.
MANAGED_LABELS_ANNOTATION = "gpushare.cluster/managed-labels"
# Node: GPU index -> when the gpu_operator role last changed that GPU's MIG layout (JSON).
LAYOUT_SINCE_ANNOTATION = "gpushare.cluster/gpu-layout-since"
# Pod templates: a hash of the configuration the workload runs; a new hash restarts it.
DEVICE_PLUGIN_CONFIG_HASH_ANNOTATION = "gpushare.cluster/device-plugin-config-hash"
MIG_LAYOUT_HASH_ANNOTATION = "gpushare.cluster/mig-layout-hash"
KUEUE_CONFIG_HASH_ANNOTATION = "gpushare.cluster/manager-config-hash"

# --- Resources, devices, taints --------------------------------------------------------------

# The device plugin's whole GPU, and the taint key of GPU nodes.
GPU_RESOURCE = "nvidia.com/gpu"
# A MIG slice resource is this prefix and the profile (mixed strategy).
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# What the device plugin appends to a shared resource (renameByDefault: time-slicing, MPS).
SHARED_SUFFIX = ".shared"
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
# A whole GPU through DRA, as Kueue counts it (deviceClassMappings).
DRA_RESOURCE = "gpushare.cluster/dra-gpu"
DRA_DEVICE_CLASS = "gpu.nvidia.com"
# MIG devices of the DRA driver (its chart's templates/deviceclass-mig.yaml), and their Kueue
# quota resource: the memory counter the claims' devices consume (planners/dynamic_mig.py).
MIG_DEVICE_CLASS = "mig.nvidia.com"
DYNAMIC_MIG_RESOURCE = "gpushare.cluster/mig-memory"

# --- Admission: what a team's namespace may ask for ---------------------------------------------

# Kueue's labels on a workload: its LocalQueue, and its WorkloadPriorityClass.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# Pod Security admission's namespace labels (the level: restricted or baseline).
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_WARN_LABEL = "pod-security.kubernetes.io/warn"
POD_SECURITY_AUDIT_LABEL = "pod-security.kubernetes.io/audit"
# The namespace label every namespace carries (the API server sets it); selectors match names through it.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# The GPU Operator's RuntimeClasses (nvidia, nvidia-cdi, nvidia-legacy) start with this.
NVIDIA_RUNTIME_CLASS_PREFIX = "nvidia"
# The env var through which the NVIDIA runtime hands out GPUs past the device plugin.
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
# The toolkit setting that makes the runtime ignore VISIBLE_DEVICES_ENV in unprivileged containers.
TOOLKIT_UNPRIVILEGED_ENV_SETTING = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
# CDI device requests by annotation (the CDI spec's annotation key prefix), which a CDI-aware
# runtime honours; and the directory whose mounts the toolkit reads as a device list when it
# accepts device lists as volume mounts. Neither has an honest use in a team's pod.
CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"
DEVICE_LIST_MOUNT_DIR = "/var/run/nvidia-container-devices"
# Kubernetes' own PriorityClasses (system-cluster-critical, system-node-critical) start with this.
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# kube-controller-manager without per-controller service accounts (with
# --use-service-account-credentials each controller is system:serviceaccount:kube-system:<name>).
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
# The ValidatingAdmissionPolicies (each with a binding of the same name) and production's PriorityClass.
GPU_ADMISSION_POLICY = "gpushare-gpu-through-kueue"
PRIORITY_ADMISSION_POLICY = "gpushare-team-priority"
KUEUE_ADMITS_POLICY = "gpushare-only-kueue-starts"
# The scheduling gate Kueue's pod webhook puts on every pod it manages; Kueue removes it on admission.
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"
PRODUCTION_PRIORITY_CLASS = "gpushare-production"

# --- Objects -----------------------------------------------------------------------------------

# The ConfigMaps of the GPU Operator namespace (applied before the chart, named in its values).
MIG_CONFIGMAP = "gpushare-mig-config"
DEVICE_PLUGIN_CONFIGMAP = "gpushare-device-plugin-config"
# The device-plugin config of GPU nodes the Plan does not know.
DEVICE_PLUGIN_DEFAULT_CONFIG = "default"
# The mig-parted layout with MIG off on every GPU (also the operator's default).
MIG_DISABLED_CONFIG = "all-disabled"
# The RoleBinding giving a team's members its namespace.
TEAM_ROLEBINDING = "gpushare-team-members"
GRAFANA_ADMIN_SECRET = "gpushare-grafana-admin"
PROMETHEUS_RULE = "gpushare-gpu-sharing"
DASHBOARD_CONFIGMAP = "gpushare-dashboard-gpu-sharing"
# The label by which the Grafana sidecar finds dashboard ConfigMaps.
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"
# Kueue's objects: the chart's fullnameOverride and what it (and the release manifests) name.
KUEUE_FULLNAME = "kueue"
KUEUE_CONTROLLER = KUEUE_FULLNAME + "-controller-manager"
KUEUE_MANAGER_CONFIGMAP = KUEUE_FULLNAME + "-manager-config"
# Who Kueue is to the API server: the chart's service account (KUEUE_CONTROLLER in KUEUE_NAMESPACE).
SERVICE_ACCOUNT_USER_PREFIX = "system:serviceaccount:"
KUEUE_USER = SERVICE_ACCOUNT_USER_PREFIX + KUEUE_NAMESPACE + ":" + KUEUE_CONTROLLER

# --- MultiKueue (Kueue v0.19 docs: tasks/manage/setup_multikueue.md, concepts/multikueue.md) ---

# The AdmissionCheck's controllerName, and the spec.managedBy Kueue's webhook sets on a
# manager's batch/v1 Job whose ClusterQueue carries the check.
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# On the manager: the AdmissionCheck, the MultiKueueConfig and the (empty) ResourceFlavor of
# the team queues. On each worker: the ServiceAccount the manager acts as, its ClusterRole
# and ClusterRoleBinding. The manager's kubeconfig Secret of worker W is "<this>-W".
MULTIKUEUE_NAME = "gpushare-multikueue"
# On each worker: the ServiceAccount token Secret (kubernetes.io/service-account-token) the
# manager's kubeconfig carries.
MULTIKUEUE_TOKEN_SECRET = "gpushare-multikueue-token"
# Kubernetes' long-lived ServiceAccount token Secret: its type, and the annotation naming the
# ServiceAccount (the token controller fills in data.token and data["ca.crt"]).
SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"

# --- On the controller -----------------------------------------------------------------------

# The artifacts directory under the inventory (Kubespray's layout), unless gpushare_artifacts_dir
# says otherwise: the gpushare.cluster.artifacts_dir lookup.
ARTIFACTS_DIR = "artifacts"
# The one directory of secrets under it (mode 0700): admin kubeconfigs, the Grafana password.
SECRETS_DIR = "secrets"

# --- Versions --------------------------------------------------------------------------------

# Every chart and image pin; role defaults read them (pinned_version), the renderers import them.
VERSIONS = {
    "gpu-operator": "v26.3.3",             # nvidia/gpu-operator chart
    "dra-driver-nvidia-gpu": "0.4.1",      # the DRA driver chart
    "kueue": "0.19.2",                     # Kueue chart, controller image and release manifests
    "kube-prometheus-stack": "88.5.3",     # prometheus-community chart
    "calico": "v3.31.3",                   # kubeadm CNI manifest
    "pause": "3.10.1",                     # kubeadm's sandbox image (kubeadm 1.34/1.35)
}
# The chart's default image is a staging tag: the controller image follows the chart pin.
KUEUE_IMAGE = {"repository": "registry.k8s.io/kueue/kueue", "tag": "v" + VERSIONS["kueue"], "pullPolicy": "IfNotPresent"}
# The format of plan.json; a previous plan of another format is not read as the current state.
PLAN_FORMAT = "gpushare.cluster/plan-v1"


def managed_label(_unused=None, selector: bool = False):
    """The managed-by label as a mapping, or as a label selector.

    Args:
        _unused: ignored; pipe ``none`` into the filter (``{{ none | gpushare.cluster.managed_label }}``).
        selector: false for the label as a mapping, true for a label selector string.

    Returns:
        ``{"app.kubernetes.io/managed-by": "gpushare.cluster"}``, or with ``selector=True`` the
        string ``app.kubernetes.io/managed-by=gpushare.cluster``.
    """
    return MANAGED_SELECTOR if selector else dict(MANAGED_LABEL)


def k8s_name(what: str) -> str:
    """A Kubernetes name, label, annotation or namespace of names.py, for the roles.

    ``{{ 'field_manager' | gpushare.cluster.k8s_name }}`` is FIELD_MANAGER.

    Args:
        what: the constant's name in lower case (``field_manager``, ``mig_configmap``, ...), a string.

    Returns:
        The name, a string; an unknown one is an error.
    """
    value = globals().get(str(what).upper())
    if not isinstance(value, str) or not str(what).islower():
        raise ValueError("names.py defines no name %r" % what)
    return value


def pinned_version(component: str) -> str:
    """The chart or image version pinned for a component, for role defaults.

    ``{{ 'kueue' | gpushare.cluster.pinned_version }}`` is the Kueue chart's version.

    Args:
        component: a key of names.VERSIONS (``gpu_operator``, ``kueue``, ...), a string.

    Returns:
        The pinned version, a string; an unknown component is an error.
    """
    if component not in VERSIONS:
        raise ValueError("no version pinned for %r (pinned: %s)" % (component, ", ".join(sorted(VERSIONS))))
    return VERSIONS[component]
