# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpushare.cluster.mig_wait (documented in plugins/modules/mig_wait.py): waits on the
controller, in Ansible's process, until the MIG Manager has reported on every node given.

A window switch that re-partitions a GPU waits here between its node labels and its quotas; a
kubernetes.core.k8s_info task retried with ``until`` started a module process (about 0.6 s) for
its first look, most often all the wait there was on the cluster twin.
"""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster.node_labels import mig_failed, mig_pending
from ansible_collections.gpushare.cluster.plugins.module_utils.names import MIG_CONFIG_STATE_LABEL
from ansible_collections.gpushare.cluster.plugins.plugin_utils import kube_client
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import plain

ARGUMENT_SPEC = dict(
    nodes=dict(type='list', elements='str', required=True),
    retries=dict(type='int', default=60),
    delay=dict(type='float', default=10),
    **kube_client.AUTH_SPEC,
)


class ActionModule(ActionBase):
    """Lists the Nodes until none of ``nodes`` is pending, for as long as ``retries`` looks
    ``delay`` apart would take."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        nodes = plain(params['nodes'])
        result.update(changed=False, pending=[], failed_nodes=[], attempts=0)
        if self._task.check_mode or not nodes:
            return result          # nothing was relabelled, nothing to wait for
        try:
            client = kube_client.dynamic_client(params['kubeconfig'], params['context'])
            resource = client.resources.get(api_version='v1', kind='Node')
            # As long as `retries` looks `delay` apart, but the first looks come sooner (0.1 s,
            # doubling up to `delay`): a quick re-partition is seen at once, a slow one every `delay`.
            deadline = time.monotonic() + max(params['retries'] - 1, 0) * params['delay']
            pause, attempt = 0.1, 0
            while True:
                attempt += 1
                live = client.get(resource).to_dict()['items']
                pending = mig_pending(live, nodes)
                result.update(attempts=attempt, pending=pending, failed_nodes=mig_failed(live, nodes))
                if not pending or time.monotonic() >= deadline:
                    break
                time.sleep(max(0.0, min(pause, params['delay'], deadline - time.monotonic())))
                pause *= 2
        except (ImportError, kube_client.DynamicApiError) as error:
            return dict(result, failed=True, msg='Could not list the Nodes to wait for the MIG Manager: %s' % error)
        if result['pending']:
            result.update(failed=True, msg=(
                'The MIG Manager has not reported on %s within %s s (%d looks; %s is neither success nor failed). '
                'Read the log of the MIG Manager pod on those nodes, or raise gpu_operator_mig_wait_retries for slow '
                're-partitions.'
                % (', '.join(result['pending']), max(params['retries'] - 1, 0) * params['delay'], result['attempts'],
                   MIG_CONFIG_STATE_LABEL)))
        return result
