# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every task of a run would import again, imported once in ansible-playbook's process.

Ansible forks a worker from its own process for every task, and a module imported there before
the fork is already loaded in every worker. The plan action imports this module, and the
strategy loads action plugins in that process before their task runs, so every task after the
plan finds loaded:

- the Kubernetes client and kubernetes.core's lookup (kube_client): 0.3 s per task that reads or
  writes the cluster;
- ansible's and this collection's filter and test plugins: Ansible loads every filter file of a
  collection to find one filter, about 40 ms per task that uses one.

A window switch runs about 60 tasks (docs/performance.md, "Window switch"). Nothing here is
needed for correctness: a plugin that cannot be loaded now is loaded by the task, as before.
"""

from __future__ import annotations

from ansible.plugins.loader import filter_loader, test_loader
from ansible.utils.display import Display

from ansible_collections.gpushare.cluster.plugins.plugin_utils import kube_client  # noqa: F401  pylint: disable=unused-import

# One name per plugin family the roles template with; the loaders load the files around it.
FILTERS = ("ansible.builtin.to_json", "gpushare.cluster.k8s_auth")
TESTS = ("ansible.builtin.match",)

try:
    for _name in FILTERS:
        filter_loader.get(_name)
    for _name in TESTS:
        test_loader.get(_name)
except Exception as error:  # pylint: disable=broad-exception-caught  # only a head start
    Display().vvv("gpushare.cluster: plugins not loaded ahead of the tasks: %s" % error)
