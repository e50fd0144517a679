#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: plan
short_description: Compute the GPU sharing plan from the inventory
version_added: "0.1.0"
description:
  - Validates the C(gpushare_*) inventory variables and computes the one Plan that every
    role of the collection applies, MIG layouts, device-plugin sharing, Kueue quotas and
    DRA claim templates included.
  - Computes on the controller and changes nothing, so it always reports C(changed=false)
    and behaves the same in check mode.
  - When the inventory has problems it fails and lists every one of them with its
    inventory path, the bad value and what is allowed; nothing is returned to apply.
author:
  - gpushare.cluster contributors (!UNKNOWN)
requirements:
  - scipy >= 1.11 on the controller (the MIG layout is an integer programme solved with HiGHS)
  - PyYAML
options:
  teams:
    description: The teams, as in C(gpushare_teams).
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - The GPU servers, host name to that host's C(gpushare_node).
    type: dict
    required: true
  workloads:
    description: Services and workloads, as in C(gpushare_workloads).
    type: list
    elements: dict
    default: []
  policy:
    description: Cluster-wide choices, as in C(gpushare_policy).
    type: dict
    default: {}
  gpu_operator_namespace:
    description: Namespace of the GPU Operator, where its ConfigMaps are written.
    type: str
    default: gpu-operator
attributes:
  check_mode:
    description: Can run in check_mode and return the same plan; it never changes anything.
    support: full
  diff_mode:
    description: Nothing is changed, so there is no diff.
    support: none
'''

EXAMPLES = r'''
- name: Plan the GPU split from the inventory
  gpushare.cluster.plan:
    teams: "{{ gpushare_teams }}"
    workloads: "{{ gpushare_workloads | default([]) }}"
    policy: "{{ gpushare_policy | default({}) }}"
    nodes: "{{ dict(groups['gpushare_gpu_nodes'] | zip(groups['gpushare_gpu_nodes']
               | map('extract', hostvars, 'gpushare_node'))) }}"
  register: gpushare_plan_result

- name: Show the split
  ansible.builtin.debug:
    msg: "{{ gpushare_plan_result.summary }}"
'''

RETURN = r'''
plan:
  description: The whole plan; its format is documented in docs/plan-format.md.
  returned: success
  type: dict
manifests:
  description: The Kubernetes objects to apply, by stage (namespaces, gpu_operator, node_labels, dra_driver, kueue).
  returned: success
  type: dict
files:
  description: Files for the plan directory, each with C(path) (relative) and C(content).
  returned: success
  type: list
  elements: dict
summary:
  description: Short table of the split and the team quotas, one line per item.
  returned: success
  type: list
  elements: str
problems:
  description: Every problem found in the inventory, each with path, message, value, allowed and hint.
  returned: failure
  type: list
  elements: dict
'''

import json
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    from ansible_collections.gpushare.cluster.plugins.module_utils.errors import PlanInvalid
    from ansible_collections.gpushare.cluster.plugins.module_utils.plan import build_plan
    from ansible_collections.gpushare.cluster.plugins.module_utils import (
        render_manifests, render_report, render_svg)
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            teams=dict(type='list', elements='dict', required=True),
            nodes=dict(type='dict', required=True),
            workloads=dict(type='list', elements='dict', default=[]),
            policy=dict(type='dict', default={}),
            gpu_operator_namespace=dict(type='str', default='gpu-operator'),
        ),
        supports_check_mode=True,
    )
    if IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib('PyYAML'), exception=IMPORT_ERROR)
    variables = {
        'gpushare_teams': module.params['teams'],
        'gpushare_nodes': module.params['nodes'],
        'gpushare_workloads': module.params['workloads'],
        'gpushare_policy': module.params['policy'],
    }
    try:
        plan = build_plan(variables)
    except PlanInvalid as invalid:
        module.fail_json(msg=str(invalid), problems=[p.as_dict() for p in invalid.problems])
    except ImportError:
        module.fail_json(msg=missing_required_lib('scipy'), exception=traceback.format_exc())
    namespace = module.params['gpu_operator_namespace']
    files = [{'path': 'plan.json', 'content': json.dumps(plan, indent=2, sort_keys=False) + '\n'},
             {'path': 'report.md', 'content': render_report.report_markdown(plan)},
             {'path': 'split.svg', 'content': render_svg.render_svg(plan)}]
    files += [{'path': 'manifests/' + f['path'], 'content': f['content']}
              for f in render_manifests.manifest_files(plan, namespace)]
    module.exit_json(changed=False, plan=plan, manifests=render_manifests.render(plan, namespace), files=files,
                     summary=render_report.split_table(plan))


if __name__ == '__main__':
    main()
