# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole Kueue manager Configuration: Kueue's shipped configuration with the Plan's merged
over it. The kueue role applies it (chart value or ConfigMap); render_manifests writes it to
manifests/kueue-configuration.yaml. Source: Kueue v0.19.2
``config/components/manager/controller_manager_config.yaml``."""

from __future__ import annotations

import copy

try:
    import yaml
except ImportError:     # ansible-core depends on PyYAML; this only keeps `import` sanity quiet
    yaml = None


# Kueue v0.19.2 config/components/manager/controller_manager_config.yaml (what the release
# manifests and the chart ship); the Plan's configuration is merged over it.
KUEUE_BASE_CONFIGURATION = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {"groupKindConcurrency": {
        "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
        "Cohort.kueue.x-k8s.io": 1, "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {"frameworks": [
        "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice",
        "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob",
        "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"]},
}


def deep_merge(base: dict, override: dict) -> dict:
    """Dicts merged recursively; anything else in override (lists included) replaces base."""
    merged = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def kueue_manager_config(plan: dict, cluster_queue_metrics: bool = True) -> dict:
    """The whole Kueue Configuration: v0.19.2's shipped config with the Plan's merged over it.

    Lists (integrations.frameworks, deviceClassMappings) come from the Plan whole.
    ClusterQueue resource metrics (kueue_cluster_queue_resource_usage, _nominal_quota) are
    off unless metrics.enableClusterQueueResources; the team dashboard needs them.
    """
    config = deep_merge(KUEUE_BASE_CONFIGURATION, plan["kueue"]["configuration"])
    if cluster_queue_metrics:
        config["metrics"]["enableClusterQueueResources"] = True
    return config


def kueue_manager_config_yaml(plan: dict, cluster_queue_metrics: bool = True) -> str:
    """The Kueue manager Configuration, as YAML text, from the Plan.

    Kueue's shipped configuration with the Plan's merged over it (the same text
    ``kueue_values`` puts in the chart values); the kueue role hashes it to restart the
    controller when it changes.

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        cluster_queue_metrics: whether Kueue exports the ClusterQueue resource metrics
            (``metrics.enableClusterQueueResources``; the team dashboard needs them).

    Returns:
        The Configuration as one YAML document, a string.
    """
    return yaml.safe_dump(kueue_manager_config(plan, cluster_queue_metrics), sort_keys=False)
