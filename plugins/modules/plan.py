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
  - Computes on the controller. It changes nothing unless O(dest) is given; then it writes the
    plan's files there and reports C(changed) when one of them was new or different.
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
    type: raw
    required: true
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
    type: raw
    required: true
  workloads:
    description: Services and workloads, as in C(gpushare_workloads), a list of dicts with the keys below
      (the planner checks the shape and names the inventory path).
    type: raw
    default: []
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
    description: Cluster-wide choices, as in C(gpushare_policy), a dict with the keys below (the planner
      checks the shape and names the inventory path).
    type: raw
    default: {}
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
        description: Cordon and drain nodes with GPU pods before a MIG layout change.
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
    type: list
    elements: str
    default: []
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
      - Directory to write the plan's files to (RV(files)), created when missing. A file whose
        content is already the same is left alone, so an unchanged plan reports C(changed=false).
      - Without it nothing is written.
    type: path
  previous:
    description:
      - The C(plan.json) of the last run, read as the GPUs' current state. With
        C(gpushare_policy.replan=stable) (the default) the MIG planner keeps every current
        partition it can, so an edit re-partitions (and drains) only the GPUs it must; RV(changes)
        lists what changes against it. C(replan=optimal) plans from scratch and still compares.
      - Default C(plan.json) under O(dest). A missing file means the first plan. A file that is not
        a plan of this format and cluster fails the run, naming the file and the fix.
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
files:
  description: Files for the plan directory, each with C(path) (relative) and C(content).
  returned: success
  type: list
  elements: dict
written:
  description: The paths under O(dest) that were (in check mode, would be) written because they were new or different.
  returned: success
  type: list
  elements: str
changes:
  description:
    - What the plan changes against O(previous) before anything is applied. C(previous) (false for a
      first plan), C(replan), C(repartitioned) (C(<node> GPU <index>) of every GPU whose MIG partition
      changes, each drained by the MIG Manager), C(gpus) (old and new layout and team of every GPU that
      changes), C(moved) (service replicas on another slice), C(placed) and C(freed) (MIG replicas new on a
      slice, or gone from one), C(quotas) and C(labels) (old and new values).
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
'''

import json
import os
import tempfile
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.gpushare.cluster.plugins.module_utils.names import GPU_OPERATOR_NAMESPACE

try:
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import CLOCK
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window, local_clock, plan_and_changes
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import PreviousPlanError, change_lines
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner
    from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_manifests, render_report, render_svg
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # raw: Ansible's own conversion would refuse a wrong shape without the inventory
            # path; the planner checks every shape and names the path (model.load_inventory).
            teams=dict(type='raw', required=True),
            nodes=dict(type='raw', required=True),
            workloads=dict(type='raw', default=[]),
            policy=dict(type='raw', default={}),
            defined_variables=dict(type='list', elements='str', default=[]),
            gpu_operator_namespace=dict(type='str', default=GPU_OPERATOR_NAMESPACE),
            window=dict(type='str', default='auto'),
            at=dict(type='str'),
            dest=dict(type='path'),
            previous=dict(type='path'),
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
    previous = module.params['previous'] or (
        os.path.join(module.params['dest'], 'plan.json') if module.params['dest'] else None)
    try:
        plan, changes = plan_and_changes(variables, read_previous(module, previous), module.params['defined_variables'])
    except PlanInvalid as invalid:
        module.fail_json(msg=str(invalid), problems=[p.as_dict() for p in invalid.problems])
    except PreviousPlanError as err:
        module.fail_json(msg='%s: %s. The plan reads the last plan as the GPUs\' current state: delete the file to '
                             'plan from scratch, or set gpushare_policy.replan: optimal to ignore it' % (previous, err))
    except ImportError:
        module.fail_json(msg=missing_required_lib('scipy'), exception=traceback.format_exc())
    window, clock = choose_window(module, plan)
    namespace = module.params['gpu_operator_namespace']
    files = [{'path': 'plan.json', 'content': json.dumps(plan, indent=2, sort_keys=False) + '\n'},
             {'path': 'report.md', 'content': render_report.report_markdown(plan)},
             {'path': 'split.svg', 'content': render_svg.render_svg(plan)}]
    files += [{'path': 'manifests/' + f['path'], 'content': f['content']}
              for f in render_manifests.manifest_files(plan, namespace)]
    summary = render_report.split_table(plan)
    # A MIG layout that a safety time limit stopped is kept, and said so in one line.
    summary += [line for line in [mig_planner.summary_line(plan.get('mig_solve'))] + [
        mig_planner.summary_line(w.get('mig_solve'), ' inside window %s' % w['name']) for w in plan['windows']] if line]
    summary += change_lines(changes)
    if plan['windows']:
        summary.append('Sharing window %s: %s' % (
            'in force at %s %s' % (clock, plan['cluster']['timezone']) if clock else 'chosen',
            '%s (%s-%s)' % (window['name'], window['from'], window['until']) if window else 'none (the base state)'))
    written = write_files(module, module.params['dest'], files) if module.params['dest'] else []
    module.exit_json(changed=bool(written), written=written, plan=plan, changes=changes, manifests=render_manifests.render(plan, namespace, window),
                     files=files, summary=summary,
                     window={k: window[k] for k in ('name', 'from', 'until')} if window else None)


def read_previous(module, path):
    """The text of the previous plan.json at ``path``, or None when there is none yet."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as err:
        module.fail_json(msg='%s: cannot read the previous plan (%s). Delete it to plan from scratch, or set '
                             'gpushare_policy.replan: optimal' % (path, err))


def write_files(module, dest, files):
    """Writes each file whose content differs under ``dest`` (not in check mode); returns their paths."""
    written = []
    for item in files:
        path = os.path.join(dest, item['path'])
        content = item['content'].encode('utf-8')
        try:
            with open(path, 'rb') as current:
                if current.read() == content:
                    continue
        except OSError:
            pass  # missing or unreadable: written below, which names the problem
        written.append(path)
        if module.check_mode:
            continue
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            handle, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.' + os.path.basename(path))
            with os.fdopen(handle, 'wb') as out:
                out.write(content)
            os.chmod(tmp, 0o644)
            module.atomic_move(tmp, path)
        except OSError as err:
            module.fail_json(msg='Cannot write the plan file %s: %s. Set gpushare_artifacts_dir (or gpushare_plan_dir) '
                                 'to a writable directory.' % (path, err.strerror or err))
    return written


def choose_window(module, plan):
    """(window or None, the HH:MM it was chosen for or None) from the window and at options."""
    wanted, clock = module.params['window'], module.params['at']
    names = [w['name'] for w in plan['windows']]
    if wanted == 'none':
        return None, None
    if wanted != 'auto':
        if wanted not in names:
            module.fail_json(msg='window %r is not a window of the plan; windows: %s (or auto, none)'
                             % (wanted, ', '.join(names) or 'none declared'))
        return next(w for w in plan['windows'] if w['name'] == wanted), None
    if clock is None:
        clock = local_clock(plan)
    elif not CLOCK.match(clock):
        module.fail_json(msg='at must be a time of day HH:MM, not %r' % clock)
    return active_window(plan, clock), clock


if __name__ == '__main__':
    main()
