# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal filters of the GPU stack roles: their steps on the Plan and on what the cluster
returned. Not the collection's API (docs/architecture.md, "Public surface"): the file name
starts with ``__``, so ``ansible-doc -l`` does not list them, while the roles still call them
as ``gpushare.cluster.<name>`` (ansible-core looks a collection filter up in every module of
plugins/filter/). They may change with the roles; the public filters are in gpushare.py.

Each filter is a function of ``plugins/module_utils/``: a renderer (``renderers/render_helm.py``,
``render_multikueue.py``, ``render_report.py``) or a helper on what the cluster returned
(``cluster/node_labels.py``, ``prune.py``, ``kube_calls.py``, ``multikueue_checks.py``); pure
Python, computed on the controller, changing nothing. Arguments are passed through a JSON round
trip (plugin_utils/json_filter.py).

The Kubernetes distribution filters (``distributions``, ``distribution``, ``distribution_fact``,
``plan_distribution``) read the one table of ``plugins/module_utils/inventory/distributions.py``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kube_calls, multikueue_checks, node_labels, prune
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_helm, render_multikueue, render_report
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter, plain

# filter name -> function
FUNCTIONS = {
    "config_hash": render_helm.config_hash,
    "dra_mig_layout_hash": render_helm.dra_mig_layout_hash,
    # The gpu_operator role's node label decisions (node_labels.py).
    "mig_configs": node_labels.mig_configs,
    "label_drift": node_labels.label_drift,
    "node_changes": node_labels.node_changes,
    "busy_nodes": node_labels.busy_nodes,
    "node_label_patches": node_labels.node_label_patches,
    "not_true": node_labels.not_true,
    # What pruning deletes (prune.py).
    "unmanaged": prune.unmanaged,
    "window_flavors": prune.window_flavors,
    "prune_candidates": prune.prune_candidates,
    # Names, the managed-by label and version pins, defined once (names.py), for the roles.
    "managed_label": names.managed_label,
    "k8s_name": names.k8s_name,
    "pinned_version": names.pinned_version,
    # Connection settings of the roles' kubernetes.core calls and gpushare.cluster.k8s_apply.
    "k8s_auth": kube_calls.k8s_auth,
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
    # The Kubernetes feature gates the Plan needs (dynamic MIG), as the distribution role's variable.
    "kubernetes_feature_gates": distributions.kubernetes_feature_gates,
}


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


def kubernetes_problems(plan: dict, host_vars) -> list:
    """Why the Kubernetes the Plan's distribution role installs cannot serve the Plan.

    The role's version variable (the first control plane's, else the role's default) against
    the minor the Plan needs (distributions.kubernetes_problems; only that variable is read).

    Args:
        plan: the plan module's ``plan``.
        host_vars: the first control-plane host's ``hostvars[host]``.

    Returns:
        The problems, a list of strings naming the variable, its value and the fix; empty if none.
    """
    plan = plain(plan)
    try:
        wanted = distributions.entry(plan["cluster"]["kubernetes_distribution"]).version_var
        picked = plain({wanted: host_vars[wanted]} if wanted in host_vars else {})
        return distributions.kubernetes_problems(plan, picked)
    except ValueError as exc:
        raise AnsibleFilterError("gpushare.cluster.kubernetes_problems: %s" % exc) from exc


class FilterModule:
    """The functions of FUNCTIONS as filters, plan_distribution and kubernetes_problems."""

    def filters(self):
        """Filter name to filter function."""
        filters = {name: json_filter(name, function) for name, function in FUNCTIONS.items()}
        filters["plan_distribution"] = plan_distribution
        filters["kubernetes_problems"] = kubernetes_problems
        return filters
