# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the GPU stack roles: the Helm values and objects rendered from the Plan.

Each filter is a function of ``plugins/module_utils/``: a renderer (``renderers/render_helm.py``,
``kueue_config.py``, ``render_monitoring.py``) or a helper on what the cluster returned
(``cluster/node_labels.py``, ``pods.py``, ``prune.py``); pure Python, computed on the
controller, changing nothing, e.g.
``{{ gpushare_plan.plan | gpushare.cluster.gpu_operator_values(runtime_paths) }}``.
Arguments are passed through a JSON round trip, so a renderer sees plain dicts, lists and
scalars (as a controller script fed JSON would) and returns JSON-shaped data.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kube_calls, node_labels, pods, prune
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_monitoring, render_report
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter

# filter name -> renderer function
RENDERERS = {
    "gpu_operator_values": render_helm.gpu_operator_values,
    "dra_driver_values": render_helm.dra_driver_values,
    "kueue_values": render_helm.kueue_values,
    "kueue_manager_config_yaml": kueue_config.kueue_manager_config_yaml,
    "kube_prometheus_values": render_helm.kube_prometheus_values,
    "config_hash": render_helm.config_hash,
    "dra_mig_layout_hash": render_helm.dra_mig_layout_hash,
    "monitoring_objects": render_monitoring.monitoring_objects,
    "prometheus_rule": render_monitoring.prometheus_rule,
    "team_dashboard": render_monitoring.team_dashboard,
    "dashboard_configmap": render_monitoring.dashboard_configmap,
    # The gpu_operator role's node label decisions (node_labels.py).
    "node_changes": node_labels.node_changes,
    "busy_nodes": node_labels.busy_nodes,
    "node_label_patches": node_labels.node_label_patches,
    "mig_pending": node_labels.mig_pending,
    "mig_failed": node_labels.mig_failed,
    "not_true": node_labels.not_true,
    # The pods in the way of a MIG change (pods.py) and what pruning deletes (prune.py).
    "gpu_pods": pods.gpu_pods,
    "pods_on_changing_gpus": pods.pods_on_changing_gpus,
    "gpu_layout_since": pods.gpu_layout_since,
    "unmanaged": prune.unmanaged,
    "window_flavors": prune.window_flavors,
    "prune_candidates": prune.prune_candidates,
    # Names, the managed-by label and version pins, defined once (names.py), for the roles.
    "managed_label": names.managed_label,
    "k8s_name": names.k8s_name,
    "pinned_version": names.pinned_version,
    # Connection settings and batched-apply results of the roles' kubernetes.core calls.
    "k8s_auth": kube_calls.k8s_auth,
    "changed_objects": kube_calls.changed_objects,
    # site.yml's closing summary (render_report.py).
    "team_lines": render_report.team_lines,
}


def _filter(name, function):
    """The filter ``name`` (json_filter) with a docstring naming the renderer it runs."""
    run = json_filter(name, function)
    run.__doc__ = "gpushare.cluster.%s: %s.%s of the Plan (see its docstring).\n\n%s" % (
        name, function.__module__.rsplit(".", 1)[-1], function.__name__, function.__doc__ or "")
    return run


def inventory_nodes(hosts, hostvars):
    """``{host: its gpushare_node}`` for the plan module's ``nodes`` option.

    A host without a ``gpushare_node`` maps to None, so the planner reports it with its
    inventory path (``map(attribute=..., default=none)`` raises a template error on
    ansible-core 2.19's host variables instead).
    """
    return {host: hostvars[host].get("gpushare_node") for host in hosts}


class FilterModule:
    """The functions of RENDERERS as filters, and inventory_nodes."""

    def filters(self):
        """Filter name to filter function."""
        filters = {name: _filter(name, function) for name, function in RENDERERS.items()}
        filters["inventory_nodes"] = inventory_nodes
        return filters
