# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal filters of the host_prep role (the file name starts with ``__``: ansible-doc does
not list them, they are not the collection's API; docs/architecture.md, "Public surface"): its
settings checked whole and the firewall's sources.

Thin wrappers of ``plugins/module_utils/inventory/host_settings.py`` (pure Python, changing nothing):

- ``host_prep_problems``: every setting that goes into a configuration file matched in full,
  repository base URLs https only; a message per problem;
- ``repository_url_problems``: package repository and signing key URLs, https only;
- ``firewall_sources``: the networks allowed to reach the cluster ports (the inventory's
  ``host_prep_firewall_sources``, or every address of the cluster's own hosts).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import host_settings
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter, plain


def _host_addresses(host_vars) -> list:
    """A host's addresses: its facts' IPv4 and IPv6 addresses, else its ansible_host."""
    facts = host_vars.get("ansible_facts") or {}
    addresses = list(facts.get("all_ipv4_addresses") or []) + list(facts.get("all_ipv6_addresses") or [])
    return addresses or [host_vars.get("ansible_host") or ""]


def firewall_sources(configured, hosts, hostvars) -> list:
    """The networks allowed to reach the Kubernetes ports host_prep opens.

    The inventory's list when it gives one; otherwise every address of the cluster's own hosts
    (their gathered facts' addresses, or ``ansible_host`` when it is an address), so etcd,
    kubelet, NodePorts and VXLAN are not open to the world.

    Args:
        configured: ``host_prep_firewall_sources``, a list of addresses or networks (empty: the
            cluster's own hosts).
        hosts: the cluster's inventory host names, a list.
        hostvars: Ansible's ``hostvars``.

    Returns:
        The sources as networks (an address as /32 or /128), sorted and unique, a list of strings.
    """
    try:
        addresses = {host: plain(_host_addresses(hostvars[host])) for host in plain(hosts)}
        return host_settings.firewall_sources(plain(configured), addresses)
    except ValueError as exc:
        raise AnsibleFilterError("gpushare.cluster.firewall_sources: %s" % exc) from exc


class FilterModule:
    """host_prep_problems, repository_url_problems and firewall_sources."""

    def filters(self):
        """Filter name to filter function."""
        return {"host_prep_problems": json_filter("host_prep_problems", host_settings.host_prep_problems),
                "repository_url_problems": json_filter("repository_url_problems", host_settings.repository_url_problems),
                "firewall_sources": firewall_sources}
