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

The Kubernetes distribution filters (``distributions``, ``distribution``, ``distribution_fact``,
``plan_distribution``) read the one table of ``plugins/module_utils/inventory/distributions.py``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kube_calls, multikueue_checks, node_labels, prune
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import (
    kueue_config, render_helm, render_monitoring, render_multikueue, render_report)
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter, plain

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
    # The gpu_operator role's node label decisions (node_labels.py).
    "mig_configs": node_labels.mig_configs,
    "label_drift": node_labels.label_drift,
    "node_changes": node_labels.node_changes,
    "busy_nodes": node_labels.busy_nodes,
    "node_label_patches": node_labels.node_label_patches,
    "mig_pending": node_labels.mig_pending,
    "mig_failed": node_labels.mig_failed,
    "not_true": node_labels.not_true,
    # What pruning deletes (prune.py).
    "unmanaged": prune.unmanaged,
    "window_flavors": prune.window_flavors,
    "prune_candidates": prune.prune_candidates,
    "being_deleted": prune.being_deleted,
    # Names, the managed-by label and version pins, defined once (names.py), for the roles.
    "managed_label": names.managed_label,
    "k8s_name": names.k8s_name,
    "pinned_version": names.pinned_version,
    # Connection settings and batched-apply results of the roles' kubernetes.core calls.
    "k8s_auth": kube_calls.k8s_auth,
    "changed_objects": kube_calls.changed_objects,
    # The multikueue role: the manager's kubeconfig Secret of a worker, and what the clusters answered.
    "multikueue_kubeconfig_secret": render_multikueue.kubeconfig_secret,
    "multikueue_unreachable": multikueue_checks.unreachable,
    "multikueue_inactive": multikueue_checks.inactive,
    # site.yml's closing summary (render_report.py).
    "team_lines": render_report.team_lines,
    # The Kubernetes distributions table (inventory/distributions.py): kubernetes.yml includes
    # an entry's role, host_prep opens its ports, each distribution role publishes its fact.
    "distributions": distributions.names,
    "distribution": distributions.describe,
    "distribution_fact": distributions.distribution_fact,
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

    Args:
        hosts: inventory host names, a list (e.g. ``groups['gpushare_gpu_nodes']``).
        hostvars: Ansible's ``hostvars``.

    Returns:
        Host name to its ``gpushare_node`` (a dict), or None where the host has none, a dict.
    """
    return {host: hostvars[host].get("gpushare_node") for host in hosts}


def plan_distribution(plan: dict, host_vars, artifacts_dir: str) -> dict:
    """The fact ``gpushare_distribution`` of the Plan's Kubernetes distribution, seen from a host.

    name, role, kubeconfig, runtime and node_name, as seen from one host (site.yml: the first
    control plane): the fact the distribution's role recorded on that host in this run; otherwise (no role ran,
    e.g. ``--tags kueue``) the same fact from the distributions table: the kubeconfig is the
    role's kubeconfig variable when the inventory sets it, else the role's default file in
    ``artifacts_dir``. Only the few variables the table names are read from ``host_vars``
    (distributions.plan_fact).

    Args:
        plan: the plan module's ``plan`` (its ``cluster.kubernetes_distribution`` is read).
        host_vars: the host's ``hostvars[host]``.
        artifacts_dir: the artifacts directory on the controller, a path.

    Returns:
        The fact, a dict: name, role, kubeconfig, runtime and node_name (None when computed).
    """
    plan = plain(plan)
    try:
        wanted = distributions.host_variables(plan)
        picked = plain({name: host_vars[name] for name in wanted if name in host_vars})
        return plain(distributions.plan_fact(plan, picked, plain(artifacts_dir)))
    except ValueError as exc:
        raise AnsibleFilterError("gpushare.cluster.plan_distribution: %s" % exc) from exc


class FilterModule:
    """The functions of RENDERERS as filters, inventory_nodes and plan_distribution."""

    def filters(self):
        """Filter name to filter function."""
        filters = {name: _filter(name, function) for name, function in RENDERERS.items()}
        filters["inventory_nodes"] = inventory_nodes
        filters["plan_distribution"] = plan_distribution
        return filters
