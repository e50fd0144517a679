#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: k8s_apply
short_description: Apply or merge-patch a list of Kubernetes objects from the controller
version_added: "0.1.0"
description:
  - Writes each object of O(definition), in order, with a server-side apply (or, with
    O(merge_patch), a JSON merge patch of an object that exists), and reports which objects
    the write changed.
  - Runs on the controller, in Ansible's own process (an action plugin), with the Kubernetes
    client loaded once per run; the roles use it where a window switch writes (node labels,
    the GPU Operator's ConfigMaps, Kueue's objects), each through
    M(kubernetes.core.k8s) having cost a module process of about a second.
  - An object counts as changed when it is new, or when what the server returned differs from
    what was read before the write in more than bookkeeping (C(metadata.managedFields),
    C(resourceVersion), C(generation)), C(status) and the spelling of a quantity (C(1) and
    C("1")).
  - Every object is read before anything is written; when one of them is being deleted
    (C(metadata.deletionTimestamp) set) nothing is written and the task fails naming them
    (writing such an object succeeds but saves nothing, its finalizer's owner deletes it).
  - In check mode every write is a server-side dry run (C(dryRun=All)); the API server and its
    admission webhooks validate it, nothing is stored.
author:
  - gpushare.cluster contributors (!UNKNOWN)
requirements:
  - kubernetes (the Python client), and the kubernetes.core collection
options:
  definition:
    description:
      - The objects, each with C(apiVersion), C(kind) and C(metadata.name) (and
        C(metadata.namespace) for a namespaced kind). Written in this order, so a Namespace
        goes before the objects in it.
    type: list
    elements: dict
    required: true
  merge_patch:
    description:
      - Send each object as a JSON merge patch (RFC 7386; C(null) deletes a key) of an
        existing object instead of applying it. A missing object fails the task.
    type: bool
    default: false
  field_manager:
    description: The field manager of the server-side apply; required unless O(merge_patch).
    type: str
  force_conflicts:
    description: Take over fields another manager owns (server-side apply C(force)).
    type: bool
    default: true
  deleting_hint:
    description: What to do about objects being deleted, added to that failure's message.
    type: str
    default: ''
extends_documentation_fragment:
  - gpushare.cluster.kube_auth
attributes:
  check_mode:
    description: Every write is a server-side dry run; the API server validates it, nothing is stored.
    support: full
  diff_mode:
    description: The objects before and after, for each one that changed.
    support: full
notes:
  - Stops at the first object the API server refuses and names it with the server's message;
    the objects before it stay written (as with M(kubernetes.core.k8s)).
'''

EXAMPLES = r'''
- name: Apply the team's namespace and its queue
  gpushare.cluster.k8s_apply:
    field_manager: gpushare-cluster
    definition:
      - apiVersion: v1
        kind: Namespace
        metadata: {name: training}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: training, namespace: training}
        spec: {clusterQueue: training}
  register: applied

- name: Set one label of a node and remove another
  gpushare.cluster.k8s_apply:
    merge_patch: true
    definition:
      - apiVersion: v1
        kind: Node
        metadata:
          name: gpu01
          labels: {nvidia.com/device-plugin.config: night, example.com/old: null}
'''

RETURN = r'''
changed_objects:
  description: C(Kind/namespace/name) of every object the task changed (namespace empty when cluster-scoped).
  returned: always
  type: list
  elements: str
  sample: ["ClusterQueue//training", "ConfigMap/gpu-operator/default-mig-parted-config"]
deleting:
  description: C(Kind/namespace/name) of the objects the cluster is deleting, when the task failed on them.
  returned: failure, when objects are being deleted
  type: list
  elements: str
'''
