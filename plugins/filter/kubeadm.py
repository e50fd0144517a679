# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the Kubernetes roles: node names and the kubeadm role's decisions.

Thin wrappers of ``plugins/module_utils/cluster/kubeadm_node.py`` (pure Python, changing nothing):

- ``node_name``: ``{{ inventory_hostname | gpushare.cluster.node_name }}``, the Kubernetes
  node name the Plan gives an inventory host (lower case, without the domain);
- ``kubeadm_module_probe_paths``, ``kubeadm_preflight_problems``: the role's preflight;
- ``kubeadm_redact``: kubeadm output without bootstrap tokens and certificate keys;
- ``kubeadm_join_configuration``, ``kubeadm_token_ids``: the JoinConfiguration a host joins with
  (a 0600 file, not argv) and the IDs of the tokens to delete after the joins;
- ``openpgp_fingerprints``: the primary key fingerprints of a downloaded signing key;
- ``kubeadm_bridge_cni``: one node's bridge CNI configuration and routes.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kubeadm_node
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter

FUNCTIONS = {
    "node_name": kubeadm_node.node_name,
    "kubeadm_module_probe_paths": kubeadm_node.module_probe_paths,
    "kubeadm_preflight_problems": kubeadm_node.preflight_problems,
    "kubeadm_redact": kubeadm_node.redact_join_secrets,
    "kubeadm_join_configuration": kubeadm_node.join_configuration,
    "kubeadm_token_ids": kubeadm_node.bootstrap_token_ids,
    "openpgp_fingerprints": kubeadm_node.openpgp_fingerprints,
    "kubeadm_bridge_cni": kubeadm_node.bridge_cni,
}


class FilterModule:
    """Node names and the kubeadm role's preflight, redaction and bridge CNI."""

    def filters(self):
        """Filter name to filter function."""
        return {name: json_filter(name, function) for name, function in FUNCTIONS.items()}
