# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal filters of the kubeadm role: its decisions. Not the collection's API (the file name
starts with ``__``, so ansible-doc does not list them; docs/architecture.md, "Public surface");
the public ``node_name`` is in gpushare.py.

Thin wrappers of ``plugins/module_utils/cluster/kubeadm_node.py`` (pure Python, changing nothing):

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
    "kubeadm_module_probe_paths": kubeadm_node.module_probe_paths,
    "kubeadm_preflight_problems": kubeadm_node.preflight_problems,
    "kubeadm_redact": kubeadm_node.redact_join_secrets,
    "kubeadm_join_configuration": kubeadm_node.join_configuration,
    "kubeadm_token_ids": kubeadm_node.bootstrap_token_ids,
    "openpgp_fingerprints": kubeadm_node.openpgp_fingerprints,
    "kubeadm_bridge_cni": kubeadm_node.bridge_cni,
}


class FilterModule:
    """The kubeadm role's preflight, redaction, joins and bridge CNI."""

    def filters(self):
        """Filter name to filter function."""
        return {name: json_filter(name, function) for name, function in FUNCTIONS.items()}
