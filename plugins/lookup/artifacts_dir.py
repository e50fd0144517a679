# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifacts directory, defined once: every role default and playbook that writes on the
controller asks this lookup."""

from __future__ import annotations

DOCUMENTATION = r"""
name: artifacts_dir
author: gpushare.cluster contributors (!UNKNOWN)
version_added: 0.1.0
short_description: The directory where the collection writes on the controller
description:
  - C(gpushare_artifacts_dir) when it is set.
  - Otherwise C(<inventory>/artifacts), as Kubespray's C({{ inventory_dir }}/artifacts), where
    C(<inventory>) is the directory of the inventory of the host the lookup runs for; for a host
    that has none (the implicit localhost, where the GPU stack roles run) the first inventory
    source given with C(-i) (the directory itself, or the directory of the file), else the
    directory of the inventory's first host; the playbook's directory when the inventory has
    no host at all.
  - Never the collection's own folder when there is an inventory, which an installed collection
    shares between inventories (plan files, rendered files, kubeconfigs, the Grafana password).
  - Takes no terms.
options:
  secret:
    description:
      - Return the secrets directory under it instead (C(<artifacts>/secrets), where the admin
        kubeconfigs and the Grafana password go; the roles create it with mode 0700).
      - With no inventory and no C(gpushare_artifacts_dir) this fails rather than fall back to the
        playbook's directory, which is the installed collection's for C(gpushare.cluster.*) playbooks.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Where the rendered files go
  ansible.builtin.debug:
    msg: "{{ lookup('gpushare.cluster.artifacts_dir') }}/rendered"

- name: Where the admin kubeconfig goes
  ansible.builtin.debug:
    msg: "{{ lookup('gpushare.cluster.artifacts_dir', secret=true) }}/gpushare-admin.conf"
"""

RETURN = r"""
_raw:
  description: The artifacts directory (one path).
  type: list
  elements: path
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpushare.cluster.plugins.module_utils.names import ARTIFACTS_DIR, SECRETS_DIR


class LookupModule(LookupBase):
    """gpushare.cluster.artifacts_dir."""

    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("gpushare.cluster.artifacts_dir takes no terms (got %s)" % terms)
        unknown = set(kwargs) - {"secret"}
        if unknown:
            raise AnsibleLookupError("gpushare.cluster.artifacts_dir takes only secret=true|false (got %s)"
                                     % ", ".join(sorted(unknown)))
        secret = kwargs.get("secret", False)
        if not isinstance(secret, bool):
            raise AnsibleLookupError("gpushare.cluster.artifacts_dir: secret must be true or false (got %r)" % (secret,))
        variables = variables or {}
        if "gpushare_artifacts_dir" in variables:
            artifacts = self._templar.template(variables["gpushare_artifacts_dir"])
        elif _inventory_dir(variables):
            artifacts = "%s/%s" % (_inventory_dir(variables), ARTIFACTS_DIR)
        elif secret:
            raise AnsibleLookupError(
                "there is no inventory to keep secrets (admin kubeconfigs, the Grafana password) next to, and the "
                "playbook's directory (%s) may be the installed collection's: give the inventory with -i "
                "<inventory>/hosts.yml, or set gpushare_artifacts_dir" % variables.get("playbook_dir"))
        else:
            artifacts = "%s/%s" % (variables.get("playbook_dir"), ARTIFACTS_DIR)
        return ["%s/%s" % (artifacts, SECRETS_DIR) if secret else artifacts]


def _inventory_dir(variables):
    """This host's inventory directory, else that of the first inventory source (the implicit
    localhost belongs to no inventory source), else that of the inventory's first host.

    Not the first host first: with ``-i <directory>`` Ansible also reads the artifacts of an
    earlier run inside it, and a host it makes of them would put the artifacts in
    ``<directory>/artifacts/artifacts``."""
    if variables.get("inventory_dir"):
        return variables["inventory_dir"]
    hosts = (variables.get("groups") or {}).get("all") or []
    if not hosts:
        return None
    for source in variables.get("ansible_inventory_sources") or []:
        if os.path.isdir(source):
            return source
        if os.path.isfile(source):
            return os.path.dirname(source)
    return variables["hostvars"][hosts[0]].get("inventory_dir")
