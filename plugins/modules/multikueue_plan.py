#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: multikueue_plan
short_description: Plan one Kueue queue per team over several clusters (MultiKueue)
version_added: "0.1.0"
description:
  - Reads C(gpushare_multikueue), the clusters of a MultiKueue setup (a manager and worker
    clusters, each worker an inventory group of GPU servers), and checks it; without
    O(worker_results) that is all it does.
  - With O(worker_results) (each worker planned by M(gpushare.cluster.plan)) it plans the
    manager, the teams' ClusterQueues and LocalQueues with quota equal to the sum of what the
    workers give each team and the MultiKueue AdmissionCheck, and renders the MultiKueue
    objects and what each worker needs (ServiceAccount, ClusterRole, token Secret).
  - Computes on the controller and changes nothing. When the inventory has problems it fails
    and lists every one with its inventory path, the bad value and the fix.
author:
  - gpushare.cluster contributors (!UNKNOWN)
options:
  multikueue:
    description:
      - The clusters, as in C(gpushare_multikueue). C(manager) has C(name) (a DNS label),
        C(kubeconfig) (its admin kubeconfig on the controller) and optionally C(context) and
        C(server). Each entry of C(workers) has those and C(group), the inventory group of
        its GPU servers. C(worker_lost_timeout) (e.g. C(15m)) is Kueue's
        C(multiKueue.workerLostTimeout) on the manager.
      - C(server) is the API address the manager's Kueue uses for that worker; by default the
        one of its kubeconfig.
    type: dict
    required: true
  teams:
    description: The manager's teams, as in C(gpushare_teams); every worker must have each with all its namespaces.
    type: list
    elements: dict
    default: []
  policy:
    description: The manager's C(gpushare_policy) (its cohort, time zone).
    type: dict
    default: {}
  groups:
    description: Ansible's C(groups) (group name to host names).
    type: dict
    required: true
  worker_results:
    description:
      - Worker cluster name to the registered result of M(gpushare.cluster.plan) for that
        worker (keys C(plan) and C(manifests)). Omit it to check the clusters only.
    type: dict
  kueue_namespace:
    description: Kueue's namespace on every cluster (the kubeconfig Secrets and the ServiceAccount live there).
    type: str
    default: kueue-system
'''

EXAMPLES = r'''
- name: Check the clusters
  gpushare.cluster.multikueue_plan:
    multikueue: "{{ gpushare_multikueue }}"
    teams: "{{ gpushare_teams }}"
    groups: "{{ groups }}"
  register: clusters

- name: The manager's plan, from each worker's plan
  gpushare.cluster.multikueue_plan:
    multikueue: "{{ gpushare_multikueue }}"
    teams: "{{ gpushare_teams }}"
    groups: "{{ groups }}"
    worker_results: "{{ dict(worker_plans.results | map(attribute='item.name') | zip(worker_plans.results)) }}"
  register: manager
'''

RETURN = r'''
clusters:
  description: The manager and the workers as read (name, kubeconfig, context, server, group, path).
  returned: success
  type: dict
plan:
  description: The manager's Plan (the format of M(gpushare.cluster.plan)'s, without nodes; key C(multikueue) lists the clusters).
  returned: success, with worker_results
  type: dict
manifests:
  description:
    - The manager's objects by stage, as M(gpushare.cluster.plan) returns them; C(kueue) holds the
      MultiKueueClusters, the MultiKueueConfig and the AdmissionCheck before the queues.
  returned: success, with worker_results
  type: dict
worker_objects:
  description: What every worker gets so that the manager can reach it (ServiceAccount, ClusterRole, binding, token Secret).
  returned: success, with worker_results
  type: list
  elements: dict
summary:
  description: One line per team with its quota on the manager.
  returned: success, with worker_results
  type: list
  elements: str
problems:
  description: Every problem found, each with path, message, value, allowed and hint.
  returned: failure
  type: list
  elements: dict
'''

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpushare.cluster.plugins.module_utils.names import KUEUE_NAMESPACE

try:
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.clusters import load_clusters
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.multikueue import plan_manager
    from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_manifests, render_multikueue
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            multikueue=dict(type='dict', required=True),
            teams=dict(type='list', elements='dict', default=[]),
            policy=dict(type='dict', default={}),
            groups=dict(type='dict', required=True),
            worker_results=dict(type='dict'),
            kueue_namespace=dict(type='str', default=KUEUE_NAMESPACE),
        ),
        supports_check_mode=True,
    )
    if IMPORT_ERROR:
        module.fail_json(msg='the collection\'s module_utils could not be imported', exception=IMPORT_ERROR)
    variables = {'gpushare_multikueue': module.params['multikueue'], 'gpushare_teams': module.params['teams'],
                 'gpushare_policy': module.params['policy']}
    try:
        spec = load_clusters(variables, module.params['groups'])
        clusters = {'manager': spec.manager.as_dict(), 'workers': [w.as_dict() for w in spec.workers]}
        results = module.params['worker_results']
        if results is None:
            module.exit_json(changed=False, clusters=clusters)
        missing = [w.name for w in spec.workers if w.name not in results]
        if missing:
            module.fail_json(msg='worker_results has no plan for %s: plan every worker of gpushare_multikueue.workers '
                                 'with gpushare.cluster.plan first' % ', '.join(missing))
        plan = plan_manager(spec, results)
    except PlanInvalid as invalid:
        module.fail_json(msg=str(invalid), problems=[p.as_dict() for p in invalid.problems])
    namespace = module.params['kueue_namespace']
    manifests = {'namespaces': render_manifests.namespace_objects(plan), 'gpu_operator': [], 'node_labels': [],
                 'dra_driver': [],
                 'kueue': render_multikueue.manager_objects(plan, namespace) + plan['kueue']['objects']}
    summary = ['%s: %s' % (t['name'], ', '.join('%s %s' % (n, r) for r, n in sorted(t['owns'].items())) or 'no quota')
               for t in plan['teams']]
    module.exit_json(changed=False, clusters=clusters, plan=plan, manifests=manifests,
                     worker_objects=render_multikueue.worker_access_objects(namespace), summary=summary)


if __name__ == '__main__':
    main()
