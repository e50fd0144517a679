# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpushare.cluster.k8s_apply (documented in plugins/modules/k8s_apply.py): a list of
objects applied (server-side apply) or merge-patched on the controller, in Ansible's process.

A window switch writes the node labels, the operator's ConfigMaps and Kueue's objects. Through
the kubernetes.core.k8s module each write was a module process importing the Kubernetes client
(about 1 s each, a third of a switch); here the client is already loaded (kube_client) and
each object is two calls: read, then write.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster.kube_calls import object_name, says_the_same
from ansible_collections.gpushare.cluster.plugins.plugin_utils import kube_client
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import plain

ARGUMENT_SPEC = dict(
    definition=dict(type='list', elements='dict', required=True),
    merge_patch=dict(type='bool', default=False),
    field_manager=dict(type='str'),
    force_conflicts=dict(type='bool', default=True),
    deleting_hint=dict(type='str', default=''),
    **kube_client.AUTH_SPEC,
)


class ActionModule(ActionBase):
    """Applies (or merge-patches) each object in order; reports which ones changed."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        if not params['merge_patch'] and not params['field_manager']:
            return dict(result, failed=True, msg='field_manager is required for a server-side apply '
                                                 '(merge_patch: false)')
        try:
            client = kube_client.dynamic_client(params['kubeconfig'], params['context'])
        except ImportError as error:
            return dict(result, failed=True, msg=str(error))
        except Exception as error:  # pylint: disable=broad-exception-caught  # kubeconfig, context: say which
            return dict(result, failed=True, msg='Could not reach the cluster with kubeconfig %s, context %s: %s'
                        % (params['kubeconfig'] or '(default)', params['context'] or '(current)', error))
        # Every object read first: nothing is written when one of them is being deleted (writing
        # it succeeds but saves nothing: its finalizer's owner deletes it when it may).
        targets = []
        for definition in plain(params['definition']):
            try:
                targets.append(_read(client, definition, params['merge_patch']))
            except (kube_client.DynamicApiError, kube_client.ResourceNotFoundError) as error:
                doing = 'Patching' if params['merge_patch'] else 'Reading'
                return dict(result, failed=True, msg='%s %s: %s' % (doing, object_name(definition), _api_message(error)))
        deleting = [object_name(d) for d, _resource, _where, before in targets
                    if before and before['metadata'].get('deletionTimestamp')]
        if deleting:
            return dict(result, failed=True, changed=False, changed_objects=[], deleting=deleting,
                        msg=('The plan applies %s, which the cluster is deleting: nothing was written. %s'
                             % (', '.join(deleting), params['deleting_hint'])).strip())
        changed, diffs = [], []
        for definition, resource, where, before in targets:
            try:
                after = self._write(client, definition, resource, where, params)
            except kube_client.DynamicApiError as error:
                return dict(result, failed=True, changed=bool(changed), changed_objects=changed,
                            msg='%s %s: %s' % ('Patching' if params['merge_patch'] else 'Applying',
                                               object_name(definition), _api_message(error)))
            if before is None or not says_the_same(before, after):
                changed.append(object_name(after))
                diffs.append({'before': before or {}, 'after': after, 'before_header': object_name(after),
                              'after_header': object_name(after)})
        result.update(changed=bool(changed), changed_objects=changed)
        if self._task.diff and diffs:
            result['diff'] = diffs
        return result

    def _write(self, client, definition, resource, where, params):
        """The object the server returned for the write (a dry run in check mode)."""
        dry_run = 'All' if self._task.check_mode else None
        if params['merge_patch']:
            after = client.patch(resource, body=definition, content_type='application/merge-patch+json',
                                 dry_run=dry_run, **where)
        else:
            after = client.server_side_apply(resource, body=definition, field_manager=params['field_manager'],
                                             force_conflicts=params['force_conflicts'], dry_run=dry_run, **where)
        return after.to_dict()


def _read(client, definition, merge_patch):
    """(the definition, its API resource, name and namespace, the object as it is or None); a
    merge patch needs the object, so its absence is an error."""
    meta = definition.get('metadata') or {}
    resource = client.resources.get(api_version=definition.get('apiVersion'), kind=definition.get('kind'))
    where = dict(name=meta.get('name'), namespace=meta.get('namespace') if resource.namespaced else None)
    try:
        before = client.get(resource, **where).to_dict()
    except kube_client.NotFoundError:
        if merge_patch:
            raise
        before = None
    return definition, resource, where, before


def _api_message(error) -> str:
    """The API server's own words (its Status message), else the client's."""
    return getattr(error, 'summary', lambda: str(error))()
