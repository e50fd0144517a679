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
  - Computes on the controller, in Ansible's own process (an action plugin). Without O(teams),
    O(workloads), O(policy) and O(nodes) it reads them from the inventory where Ansible holds
    them, instead of receiving them as arguments, which at 1,000 servers cost more than the
    planning itself (docs/performance.md).
  - It changes nothing unless O(dest) is given; then it writes the plan's files there and
    reports C(changed) when one of them was new or different.
  - A crash of the planner or of a renderer (a bug, not a problem of the inventory) fails with
    what was being done, the exception and where its traceback was written, in RV(crash).
  - When the inventory has problems it fails and lists every one of them with its
    inventory path, the bad value and what is allowed; nothing is returned to apply.
author:
  - gpushare.cluster contributors (!UNKNOWN)
requirements:
  - scipy >= 1.11 on the controller (the MIG layout is an integer programme solved with HiGHS)
  - PyYAML
options:
  teams:
    description:
      - The teams, as in C(gpushare_teams), a list of dicts with the keys below. Keys and shapes are
        checked by the planner, which names the inventory path, the bad value and what is allowed
        (unknown keys and a dict where a list belongs included), so this option takes any value.
      - Default C(gpushare_teams) of the inventory.
    type: raw
    suboptions:
      name:
        description: Team name (a DNS label); names its ClusterQueue, LocalQueue and priority class.
        type: str
        required: true
      namespaces:
        description: Namespaces of the team's workloads (one LocalQueue each); default the team name.
        type: list
        elements: str
      priority:
        description: WorkloadPriorityClass value of the team's workloads.
        type: int
      production:
        description: The one production team; reclaims lent GPUs at once (C(reclaimWithinCohort=Any)).
        type: bool
        default: false
      lend:
        description: Lend idle owned quota to the cohort.
        type: bool
      borrow:
        description: Borrow idle quota of other teams.
        type: bool
      borrowing_limit:
        description: At most this many GPUs borrowed (per resource); none means unlimited.
        type: int
      lending_limit:
        description: At most this many GPUs lent, a total over all pools.
        type: int
      members:
        description: Groups bound to the team's namespaces (RoleBindings).
        type: list
        elements: str
  nodes:
    description:
      - The GPU servers, inventory host name (the Kubernetes node name) to that host's
        C(gpushare_node). Build it with the C(gpushare.cluster.inventory_nodes) filter.
      - 'Each C(gpushare_node) has C(gpu_model) (catalogue key, alias, NVML name or PCI id; required),
        C(gpu_count) (1..16; required), C(gpus) (per-GPU list, below), C(cpus), C(memory_gib),
        C(host_driver) (bool: the driver is installed on the host, not by the GPU Operator) and
        C(dra) (bool: the NVIDIA DRA driver serves this server).'
      - 'Each entry of C(gpus) has C(index) (0..gpu_count-1; required), C(model), C(mode)
        (auto, whole, mig, timeslice, mps, mig-dynamic), C(team), C(replicas), C(mig_layout) (profile to
        count) and C(schedule), a list of windows with C(name), C(from) and C(until)
        (quoted C("HH:MM")), C(mode), C(team) and C(replicas). A window changes the mode, or keeps
        it and changes the team or the replicas (not of a MIG GPU); see docs/sharing-windows.md.'
      - A dict; the planner checks its shape and names the inventory path.
      - Default the C(gpushare_node) of each host of the inventory group C(gpushare_gpu_nodes)
        (none where a host has none), as C(gpushare.cluster.inventory_nodes) builds it.
    type: raw
  workloads:
    description:
      - Services and workloads, as in C(gpushare_workloads), a list of dicts with the keys below
        (the planner checks the shape and names the inventory path).
      - Default C(gpushare_workloads) of the inventory, else none.
    type: raw
    suboptions:
      name:
        description: Workload name (a DNS label).
        type: str
        required: true
      team:
        description: The owning team (a name in O(teams)).
        type: str
        required: true
      kind:
        description:
          - What the workload is. Without O(workloads[].sharing) or O(workloads[].isolation) a
            notebook time-slices a GPU and the other kinds get whole GPUs. Whole GPUs no team owns
            go to the teams whose serving workloads are short of whole GPUs.
        type: str
        required: true
        choices: [serving, notebook, training, batch]
      sharing:
        description: How it shares a GPU; the planner picks when unset.
        type: str
        choices: [whole, mig, timeslice, mps, dra, mig-dynamic]
      isolation:
        description: Isolation asked for, instead of O(workloads[].sharing) (full=whole, hardware=mig, none=timeslice).
        type: str
        choices: [full, hardware, none]
      memory_gib:
        description: GPU memory each replica needs, in GiB.
        type: float
      replicas:
        description: Number of replicas.
        type: int
      gpus:
        description: GPUs per replica.
        type: int
      gpu_model:
        description: GPU model the workload needs (catalogue name).
        type: str
      mig_profile:
        description: A fixed MIG profile (e.g. C(1g.18gb)) instead of one sized from O(workloads[].memory_gib).
        type: str
      device_request:
        description: A DRA request served by the NVIDIA DRA driver.
        type: dict
        suboptions:
          min_memory_gib:
            description: The device must have at least this much memory.
            type: float
            required: true
  policy:
    description:
      - Cluster-wide choices, as in C(gpushare_policy), a dict with the keys below (the planner
        checks the shape and names the inventory path).
      - Default C(gpushare_policy) of the inventory, else the defaults below.
    type: raw
    suboptions:
      cluster_name:
        description: Cluster name (a DNS label).
        type: str
        default: gpushare
      kubernetes_distribution:
        description: Which role installs Kubernetes.
        type: str
        choices: [kubeadm, microk8s]
        default: kubeadm
      cohort:
        description: The Kueue Cohort of all team ClusterQueues.
        type: str
        default: gpushare
      mig_leftover:
        description: Carve MIG capacity no workload takes into slices for the GPU's team, or leave it.
        type: str
        choices: [carve, leave]
        default: carve
      cpu_memory_quota:
        description: Leave CPU and memory out of the quotas, or size them per team.
        type: str
        choices: [ignore, proportional]
        default: ignore
      allow_disruption:
        description:
          - To re-cut a GPU under running pods, cordon the node, evict the pods on the GPU, re-cut it
            and uncordon. The pods are deleted, so PodDisruptionBudgets are not honoured. Without it
            the run stops and names the pods.
        type: bool
        default: false
      timezone:
        description: IANA time zone of the sharing windows.
        type: str
        default: UTC
      replan:
        description:
          - C(stable) keeps every GPU's current MIG partition (from O(previous)) that it can, then
            moves the fewest services; C(optimal) plans from scratch (fewest GPUs, least memory wasted)
            and RV(changes) says how many GPUs that re-partitions.
        type: str
        choices: [stable, optimal]
        default: stable
      gpu_prices:
        description: Price per GPU model and hour, for the reports.
        type: dict
  defined_variables:
    description:
      - The names of the variables the inventory defines (C(query('ansible.builtin.varnames', '^gpushare_'))).
        A C(gpushare_*) name the collection does not read fails the run, naming it with the closest known
        name, before any other problem (a misspelt C(gpushare_team) would otherwise show only as the
        errors of a missing C(gpushare_teams)).
      - Default, when O(teams) is not given, the C(gpushare_*) variables of the inventory, else none.
    type: list
    elements: str
  gpu_operator_namespace:
    description: Namespace of the GPU Operator, where its ConfigMaps are written.
    type: str
    default: gpu-operator
  window:
    description:
      - Which state of the cluster the returned C(manifests) are for, when GPUs have sharing
        windows (C(schedule) in C(gpushare_node)).
      - C(auto) is the window in force at O(at), or now in C(gpushare_policy.timezone), and the
        base state outside every window; so a run at any hour converges to that hour's state
        and a scheduled run at a window's boundaries switches it.
      - C(none) is the base state; a window name forces that window.
    type: str
    default: auto
  at:
    description:
      - Time of day C(HH:MM) in C(gpushare_policy.timezone) for O(window=auto), instead of now
        (to preview a window, or for a scheduler that runs a little early).
    type: str
  dest:
    description:
      - Directory to write the plan's files to (C(plan.json), C(report.md), C(split.svg), C(manifests/)), created when missing. A file whose
        content is already the same is left alone, so an unchanged plan reports C(changed=false).
      - Without it nothing is written.
    type: path
  previous:
    description:
      - The plan last applied, read as the GPUs' current state. With
        C(gpushare_policy.replan=stable) (the default) the MIG planner keeps every current
        partition it can, so an edit re-cuts only the GPUs it must; RV(changes) lists what changes
        against it, and keeps listing it until a plan is applied. C(replan=optimal) plans from
        scratch and still compares.
      - Default C(applied-plan.json) under O(dest) (the plan C(site.yml) applied last) when there is
        one, else C(plan.json) under O(dest) (docs/day-two.md). No file means the first plan. A file
        that is not a plan of this format and cluster fails the run, naming the file and the fix.
    type: path
attributes:
  check_mode:
    description: Returns the same plan; with O(dest), reports which files would be written and writes none.
    support: full
  diff_mode:
    description: No diff is shown; RV(written) lists the files that differ.
    support: none
'''

EXAMPLES = r'''
- name: Plan the GPU split from the inventory, and write its files
  gpushare.cluster.plan:
    dest: "{{ lookup('gpushare.cluster.artifacts_dir') }}"
  register: gpushare_plan

- name: The same from variables given as options
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
  contains:
    format:
      description: Format version.
      type: str
      sample: gpushare.cluster/plan-v1
    cluster:
      description: Cluster-wide decisions (distribution, cohort, allow_disruption, time zone).
      type: dict
    nodes:
      description: Each GPU server with its labels, GPUs (mode, team, MIG layout) and what it advertises.
      type: list
      elements: dict
    teams:
      description: Each team with its namespaces, queues, owned quota, priority, lending and borrowing, Pod Security level.
      type: list
      elements: dict
    kueue:
      description: The Kueue configuration and objects (ResourceFlavors, Cohort, ClusterQueues, LocalQueues).
      type: dict
    dra:
      description: DRA nodes and ResourceClaimTemplates.
      type: dict
    windows:
      description: Each sharing window with its node labels and Kueue objects.
      type: list
      elements: dict
    workloads:
      description: Each workload with where it runs (GPU, MIG slice, time-sliced replica or DRA claim).
      type: list
      elements: dict
    admission:
      description:
        - What team namespaces may ask for (docs/security.md); the namespaces stage of RV(manifests) carries
          the admission policies, Pod Security labels and production's PriorityClass made from it.
      type: dict
    warnings:
      description: Things that work but may surprise (e.g. idle capacity), one message each.
      type: list
      elements: str
manifests:
  description:
    - The Kubernetes objects to apply, by stage (namespaces, gpu_operator, node_labels, dra_driver, kueue),
      for the state chosen by O(window) (node labels and Kueue flavors and ClusterQueues differ inside a window).
  returned: success
  type: dict
window:
  description: The window the manifests are for (name, from, until), or null for the base state.
  returned: success
  type: dict
written:
  description: The paths under O(dest) that were (in check mode, would be) written because they were new or different.
  returned: success
  type: list
  elements: str
changes:
  description:
    - What the plan changes against O(previous) before anything is applied (also in C(changes.md) and
      C(changes.json) under O(dest)). C(previous) (false for a first plan), C(against) (the previous
      plan's file and sha256), C(replan), C(repartitioned) (C(<node> GPU <index>) of every GPU re-cut
      because its MIG partition changes; cordon the node, evict the pods on the GPU, re-cut, uncordon;
      PodDisruptionBudgets are not honoured), C(gpus) (old and new layout and team of every GPU that
      changes), C(restarts) (every pod that restarts, with C(reasons) (re-cut GPU, new resource, team
      changed, mode changed, GPU removed) and C(manifest), the change its team makes), C(started) and
      C(ended) (replicas new or gone), C(quotas) and C(labels) (old and new values).
  returned: success
  type: dict
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
crash:
  description:
    - When the planner or a renderer crashed (a bug to report), C(stage) (what was being done, e.g.
      C(rendering the report (report.md))), C(error) (the exception's type), C(message) and
      C(traceback_file) (where its traceback was written; with C(-vvv) it is in C(msg) too).
  returned: failure, on a crash
  type: dict
'''
