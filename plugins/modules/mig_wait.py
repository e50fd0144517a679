#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: mig_wait
short_description: Wait until the MIG Manager has reported on the nodes whose MIG layout changed
version_added: "0.1.0"
description:
  - Lists the cluster's Nodes until the C(nvidia.com/mig.config.state) label of each node in
    O(nodes) says C(success) or C(failed), for as long as O(retries) looks O(delay) seconds
    apart would take. The first looks come sooner (0.1 s after the first, doubling up to
    O(delay)), so a quick re-partition is seen at once.
  - Runs on the controller, in Ansible's own process (an action plugin), with the Kubernetes
    client loaded once per run; the gpu_operator role waits with it between the node labels
    and the quotas of a window switch.
  - Fails, naming the nodes, when one is still pending after the last look. Nodes whose MIG
    Manager failed are returned in RV(failed_nodes), not failed on; the role shows their
    MIG Manager's log.
  - In check mode it waits for nothing (nothing was relabelled).
author:
  - gpushare.cluster contributors (!UNKNOWN)
requirements:
  - kubernetes (the Python client), and the kubernetes.core collection
options:
  nodes:
    description: Names of the nodes whose C(nvidia.com/mig.config) label changed.
    type: list
    elements: str
    required: true
  retries:
    description: With O(delay), how long to wait at most ((O(retries) - 1) x O(delay) seconds).
    type: int
    default: 60
  delay:
    description: The longest pause between two lists, in seconds.
    type: float
    default: 10
extends_documentation_fragment:
  - gpushare.cluster.kube_auth
attributes:
  check_mode:
    description: Waits for nothing (nothing was relabelled).
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
'''

EXAMPLES = r'''
- name: Wait for the MIG Manager on the relabelled nodes
  gpushare.cluster.mig_wait:
    nodes: [gpu01, gpu02]
    retries: 90
    delay: 10
  register: mig
'''

RETURN = r'''
pending:
  description: The nodes still pending after the last look (empty on success).
  returned: always
  type: list
  elements: str
failed_nodes:
  description: The nodes whose MIG Manager reported C(failed).
  returned: always
  type: list
  elements: str
attempts:
  description: How many times the Nodes were listed.
  returned: always
  type: int
'''
