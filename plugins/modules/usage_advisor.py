#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: usage_advisor
short_description: Propose the GPU split from weeks of usage data in Prometheus
version_added: "0.1.0"
description:
  - Reads O(days) of dcgm-exporter and kube-state-metrics history from Prometheus over its
    HTTP API and proposes, per service, how it should get its GPU - a whole GPU, the smallest
    MIG profile that holds its memory and compute, time-slicing with replicas from memory, or
    a DRA device request - with the evidence (memory needed, compute needed, the kind detected
    from the pattern).
  - Proposes per-team quotas from concurrent use, sharing windows from idle hours, and which
    GPUs to buy (with the cost when C(gpushare_policy.gpu_prices) is given).
  - Returns the proposal as C(gpushare_workloads) and per-host C(gpushare_node) that
    C(playbooks/plan.yml) accepts as they are (checked with the planner before returning),
    the differences against the current inventory, a Markdown report and one SVG chart per
    service.
  - Reports pods that match no workload, and proposes them as a new workload only when they
    duplicate none.
  - Reads each time-sliced or MPS device once across every service on it (dcgm-exporter copies
    its series to every pod on it) and estimates each sharer's memory and activity from that pool.
  - Plans the proposal with the planner C(plan.yml) uses; while the planner refuses it, repairs it
    (GPUs back to the team that owns them, more sharers per time-sliced GPU, what does not fit to
    the GPUs to buy) and says which repair did what; the current inventory is kept only when no
    repair helps.
  - Gives no proposal from too little data - less than O(min_days) of history, a node with
    more than O(max_gap) of its samples missing, a service seen for less than O(min_days) -
    nor where the choice differs between the two halves of the window; such services keep
    their current entry.
  - Computes on the controller and writes only the advice, under O(dest); C(changed) says whether
    a file there changed, and check mode writes nothing.
  - The inventory copy under C(inventory/) holds only the files the proposal rewrites (mode 0600,
    in directories of mode 0700, since they keep that file's other variables, passwords included);
    every other inventory file is a symbolic link to the original, so no secret is copied. Paths,
    never file contents, are returned.
  - C(user:pass@) in O(prometheus_url) is sent as basic credentials and masked in the result.
author:
  - gpushare.cluster contributors (!UNKNOWN)
requirements:
  - numpy and scipy on the controller (scipy checks the proposal with the MIG planner)
  - PyYAML
options:
  prometheus_url:
    description:
      - Base URL of the Prometheus server that scrapes dcgm-exporter and kube-state-metrics,
        e.g. C(http://prometheus-operated.monitoring:9090) (with its route prefix if it has one).
      - C(user:pass@) in it is used as O(username) and O(password) and shown in no message or
        report; redirects are followed without the credentials, and never from https to http.
    type: str
    required: true
  dest:
    description:
      - The advice directory the files are written to (created, mode 0755; C(inventory/) in it 0700).
    type: path
    required: true
  days:
    description: Days of history to read, ending at O(end).
    type: int
    default: 28
  min_days:
    description:
      - Least history the advice is given from; with less the module fails with
        "not enough data" and proposes nothing.
    type: int
    default: 14
  step:
    description: Seconds between the samples read (the query_range step).
    type: int
    default: 300
  end:
    description:
      - End of the history read, as Unix seconds or ISO 8601 (C(2026-12-01T20:00:00Z));
        default now.
    type: str
  teams:
    description: The teams, as in C(gpushare_teams).
    type: list
    elements: dict
    required: true
  nodes:
    description: The GPU servers, host name to that host's C(gpushare_node).
    type: dict
    required: true
  workloads:
    description: The current services and workloads, as in C(gpushare_workloads).
    type: list
    elements: dict
    default: []
  policy:
    description: Cluster-wide choices, as in C(gpushare_policy) (C(gpu_prices) prices the GPUs to buy).
    type: dict
    default: {}
  match:
    description:
      - How each workload's pods are recognised, as in C(gpushare_advise_match) - workload name to one
        selector or a list of them; a pod is the workload's when every key of one selector holds -
        C(namespace), C(owner_kind) (C(<none>) for a pod without a controller, e.g. JupyterHub's
        C(jupyter-<user>)), C(owner_name) (the owner or its controller - the Deployment of a
        ReplicaSet, the CronJob of a Job), C(name_prefix), C(name_pattern) (a regular expression the
        whole pod name matches), C(labels) (pod labels, read from C(kube_pod_labels), so they must be on
        kube-state-metrics' C(metricLabelsAllowlist)) and C(queue) (the C(kueue.x-k8s.io/queue-name) label).
      - A workload without selectors is recognised by its name - the pods whose controller is named
        like it, or C(<name>-...) in its team's namespaces. A pod matched by two workloads, or a
        selector that matches no pod, fails the module with a message naming both.
    type: dict
    default: {}
  inventory_dir:
    description:
      - The inventory directory. When given, O(dest) gets C(inventory/), the inventory with the
        proposal in place of C(gpushare_workloads) and each host's C(gpushare_node) (the files
        that define them rewritten at mode 0600, every other file a symbolic link to the original),
        so C(ansible-playbook -i <dest>/inventory/hosts.yml playbooks/plan.yml) plans it
        (pass the inventory file, as Ansible reads every file of a directory given with C(-i) as inventory).
    type: path
  memory_headroom:
    description: Memory needed is the peak times (1 + this).
    type: float
    default: 0.2
  compute_percentile:
    description: Compute needed is this percentile of a replica's activity, in whole-GPU terms.
    type: float
    default: 95.0
  quota_percentile:
    description: A team's quota is this percentile of the GPUs it uses at once.
    type: float
    default: 90.0
  max_gap:
    description: Largest share of missing samples of a node before its services count as not enough data.
    type: float
    default: 0.1
  min_window_hours:
    description: Shortest daily sharing window proposed from idle hours.
    type: int
    default: 6
  calibration:
    description:
      - A calibration file, the JSON that C(benchmarks/sharing_modes.py) writes (format 1) when run on one
        of your GPU nodes - what time-slicing and MPS with and without per-client limits cost on your card.
        The advisor reads its ratios of contended figures (medians over the runs, with their spread) where it
        chooses between the sharing modes (MPS for co-located small inference where MPS was ahead of
        time-slicing in every run, refused next to heavy neighbours) and cites them.
      - Without it, the H200 run shipped with the collection (docs/performance.md) is used.
      - A file that cannot be read, or lacks a ratio the advisor reads, fails the module naming it.
    type: path
  timeout:
    description: Seconds to wait for each Prometheus answer.
    type: float
    default: 60
  validate_certs:
    description: Verify the TLS certificate of an https URL.
    type: bool
    default: true
  ca_path:
    description: CA bundle that signed Prometheus' certificate.
    type: path
  client_cert:
    description: Client certificate (PEM) for mutual TLS.
    type: path
  client_key:
    description: Key of O(client_cert).
    type: path
  bearer_token:
    description: Bearer token sent to Prometheus (e.g. a service account token behind an OAuth proxy).
    type: str
  username:
    description: User for HTTP basic authentication.
    type: str
  password:
    description: Password for HTTP basic authentication.
    type: str
attributes:
  check_mode:
    description: Can run in check_mode and returns the same advice; writes nothing.
    support: full
  diff_mode:
    description: Nothing is changed on the target; the proposal's differences are returned in C(changes).
    support: none
seealso:
  - module: gpushare.cluster.plan
'''

EXAMPLES = r'''
- name: Propose the split from four weeks of usage
  gpushare.cluster.usage_advisor:
    prometheus_url: http://prometheus-operated.monitoring:9090
    days: 28
    teams: "{{ gpushare_teams }}"
    workloads: "{{ gpushare_workloads | default([]) }}"
    policy: "{{ gpushare_policy | default({}) }}"
    nodes: "{{ groups['gpushare_gpu_nodes'] | gpushare.cluster.inventory_nodes(hostvars) }}"
    inventory_dir: "{{ hostvars[groups['gpushare_gpu_nodes'][0]].inventory_dir }}"
    dest: "{{ inventory_dir }}/artifacts/advise"
  register: advice

- name: Show what would change
  ansible.builtin.debug:
    msg: "{{ advice.summary }}"
'''

RETURN = r'''
advice:
  description:
    - The whole advice (format C(gpushare.cluster/advice-v1)) - window read, per service the
      evidence, kind, choice, the rule that decided it (C(rule), see docs/advisor.md) and status
      (C(ok), C(not_enough_data), C(unstable), C(no_data), C(unknown_namespace)), per team quotas
      and idle hours, the sharing windows the proposed nodes hold (C(proposed) false for one kept as it is), GPUs to
      buy, nodes that reported nothing for a while (C(outages)), notes, and the calibration cited (C(calibration), where
      it was measured, its ratios (medians over the runs), C(runs) and each ratio's C(spread)).
    - As C(advice.json) holds it - without each service's chart series, which C(report.md) and
      C(charts/) draw.
  returned: success
  type: dict
proposal:
  description: C(workloads) (the proposed C(gpushare_workloads)) and C(nodes) (host to proposed C(gpushare_node)).
  returned: success
  type: dict
plan_check:
  description: What the planner said of the proposal (C(accepted), the repairs made, or why the current inventory is kept).
  returned: success
  type: str
changes:
  description: The differences against the current inventory, one line each.
  returned: success
  type: list
  elements: str
files:
  description:
    - The paths written under O(dest), relative to it, never their contents - C(workloads.yml),
      C(host_vars/<host>.yml), C(proposal.diff), C(report.md), C(advice.json),
      C(charts/<service>.<namespace>.svg) and, with O(inventory_dir), C(inventory/...) (the
      rewritten files and the links to the others).
  returned: success
  type: list
  elements: str
summary:
  description: Short lines for a person - one per service, the windows and the changes.
  returned: success
  type: list
  elements: str
queries:
  description:
    - Every request sent to Prometheus, in order (a range query longer than 11,000 steps is
      several requests); also returned when the module fails after reaching Prometheus.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The API path, C(/api/v1/query) or C(/api/v1/query_range).
      type: str
      returned: always
    query:
      description: The PromQL expression.
      type: str
      returned: always
    seconds:
      description: Wall seconds from sending the request to its answer decoded.
      type: float
      returned: always
    bytes:
      description: Size of the answer's body.
      type: int
      returned: always
    series:
      description: Series in the answer.
      type: int
      returned: always
    samples:
      description: Samples in the answer (one per series for an instant query).
      type: int
      returned: always
'''

import datetime
import json
import os
import tempfile
import time
import traceback
import urllib.parse

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.gpushare.cluster.plugins.module_utils.names import ARTIFACTS_DIR

try:
    import yaml
    from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import calibration, render_advice, usage_advisor
    from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import (
        PrometheusClient, PrometheusError)
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()


def parse_end(value):
    """Unix seconds from O(end) (seconds or ISO 8601), or now."""
    if value in (None, ''):
        return time.time()
    try:
        return float(value)
    except ValueError:
        pass
    text = value.strip().replace('Z', '+00:00')
    stamp = datetime.datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.timezone.utc)
    return stamp.timestamp()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            prometheus_url=dict(type='str', required=True),
            days=dict(type='int', default=28),
            min_days=dict(type='int', default=14),
            step=dict(type='int', default=300),
            end=dict(type='str'),
            teams=dict(type='list', elements='dict', required=True),
            nodes=dict(type='dict', required=True),
            workloads=dict(type='list', elements='dict', default=[]),
            policy=dict(type='dict', default={}),
            match=dict(type='dict', default={}),
            inventory_dir=dict(type='path'),
            dest=dict(type='path', required=True),
            memory_headroom=dict(type='float', default=0.2),
            compute_percentile=dict(type='float', default=95.0),
            quota_percentile=dict(type='float', default=90.0),
            max_gap=dict(type='float', default=0.1),
            min_window_hours=dict(type='int', default=6),
            calibration=dict(type='path'),
            timeout=dict(type='float', default=60),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
            client_cert=dict(type='path'),
            client_key=dict(type='path'),
            bearer_token=dict(type='str', no_log=True),
            username=dict(type='str'),
            password=dict(type='str', no_log=True),
        ),
        supports_check_mode=True,
    )
    if IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib('PyYAML and numpy'), exception=IMPORT_ERROR)
    p = module.params
    try:
        url_password = urllib.parse.urlsplit(p['prometheus_url']).password
    except ValueError:
        url_password = None
    if url_password:
        module.no_log_values.add(url_password)
    problems = []
    if not 1 <= p['days'] <= 366:
        problems.append('days must be 1..366 (got %s)' % p['days'])
    if not 1 <= p['min_days'] <= p['days']:
        problems.append('min_days must be 1..days (got %s with days %s); the advice needs at least min_days of history'
                        % (p['min_days'], p['days']))
    if not 10 <= p['step'] <= 3600:
        problems.append('step must be 10..3600 seconds (got %s)' % p['step'])
    if not 0 <= p['memory_headroom'] <= 4:
        problems.append('memory_headroom must be 0..4 (got %s)' % p['memory_headroom'])
    for key in ('compute_percentile', 'quota_percentile'):
        if not 50 <= p[key] <= 100:
            problems.append('%s must be 50..100 (got %s)' % (key, p[key]))
    if not 0 <= p['max_gap'] < 1:
        problems.append('max_gap must be 0..1 (got %s)' % p['max_gap'])
    if not 1 <= p['min_window_hours'] <= 23:
        problems.append('min_window_hours must be 1..23 (got %s)' % p['min_window_hours'])
    try:
        end = parse_end(p['end'])
    except ValueError:
        problems.append('end must be Unix seconds or ISO 8601 such as 2026-12-01T20:00:00Z (got %r)' % p['end'])
    if problems:
        module.fail_json(msg='; '.join(problems))
    settings = usage_advisor.Settings(days=p['days'], min_days=p['min_days'], step=p['step'],
                                      memory_headroom=p['memory_headroom'], compute_percentile=p['compute_percentile'],
                                      quota_percentile=p['quota_percentile'], max_gap=p['max_gap'],
                                      min_window_hours=p['min_window_hours'])
    variables = {'gpushare_teams': p['teams'], 'gpushare_nodes': p['nodes'],
                 'gpushare_workloads': p['workloads'], 'gpushare_policy': p['policy'],
                 'gpushare_advise_match': p['match']}
    client = None
    try:
        measured = calibration.load(p['calibration'])
        label_names = usage_advisor.match_label_names(variables)
        client = PrometheusClient(p['prometheus_url'], timeout=p['timeout'], validate_certs=p['validate_certs'],
                                  ca_path=p['ca_path'], client_cert=p['client_cert'], client_key=p['client_key'],
                                  bearer_token=p['bearer_token'], username=p['username'], password=p['password'])
        usage = usage_advisor.fetch_usage(client, end, settings, label_names)
        advice = usage_advisor.advise(usage, variables, settings, calibration=measured)
    except (PrometheusError, usage_advisor.AdviceError) as exc:
        module.fail_json(msg=str(exc), queries=client.log if client else [])
    plan_check = advice['plan_check']['text']
    proposal = {'workloads': advice['proposal']['workloads'], 'nodes': advice['proposal']['nodes']}
    files, change_lines = advice_files(advice, variables, p['inventory_dir'], plan_check)
    try:
        changed = write_files(p['dest'], files, module.check_mode)
    except OSError as exc:
        module.fail_json(msg='Cannot write the advice to %s: %s. Set gpushare_advise_dir (or gpushare_artifacts_dir) '
                             'to a directory this user may write.' % (p['dest'], exc))
    # Without the charts' series (report.md and charts/ have them): at 1,000 GPUs they made the
    # result 15 MB, which cost Ansible 20 s to take in.
    module.exit_json(changed=changed, advice=without_charts(advice), proposal=proposal, plan_check=plan_check,
                     changes=change_lines,
                     files=[f['path'] for f in files], summary=summary(advice, change_lines, plan_check),
                     queries=client.log)


def advice_files(advice, variables, inventory_dir, plan_check):
    proposal = advice['proposal']
    workloads_yaml = render_advice.workloads_file(advice)
    current_yaml = render_advice.to_yaml({'gpushare_workloads': variables['gpushare_workloads']})
    files = [{'path': 'workloads.yml', 'content': workloads_yaml}]
    diff = [render_advice.unified('---\n' + current_yaml, workloads_yaml, 'workloads.yml')]
    for host, node in sorted(proposal['nodes'].items()):
        text = render_advice.node_file(host, node)
        files.append({'path': 'host_vars/%s.yml' % host, 'content': text})
        current = render_advice.to_yaml({'gpushare_node': variables['gpushare_nodes'].get(host)})
        diff.append(render_advice.unified('---\n' + current, text, 'host_vars/%s.yml' % host))
    change_lines = render_advice.changes(variables['gpushare_workloads'], proposal['workloads'],
                                         variables['gpushare_nodes'], proposal['nodes'])
    files.append({'path': 'proposal.diff', 'content': ''.join(diff) or '# no differences\n'})
    files.append({'path': 'report.md', 'content': render_advice.report_markdown(advice, change_lines, plan_check)})
    for service in advice['services']:
        if service.get('chart'):
            files.append({'path': render_advice.chart_name(service), 'content': render_advice.chart_svg(service)})
    files.append({'path': 'advice.json', 'content': json.dumps(without_charts(advice), indent=1, sort_keys=True) + '\n'})
    if inventory_dir:
        files += inventory_copy(inventory_dir, proposal, advice)
    return files, change_lines


def without_charts(advice):
    """The advice without each service's chart series (what report.md's charts are drawn from)."""
    return dict(advice, services=[dict((k, v) for k, v in s.items() if k != 'chart') for s in advice['services']])


def _skipped(folder, name):
    """Hidden folders, the artifacts directory under the inventory (Kubespray's layout, where
    plan.yml and advise.yml write) and any earlier advice are not part of the inventory."""
    path = os.path.join(folder, name)
    return name.startswith('.') or name == ARTIFACTS_DIR or os.path.isfile(os.path.join(path, 'advice.json'))


def _yaml_files(base, sub):
    root = os.path.join(base, sub)
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped(folder, d))
        for name in sorted(names):
            if name.endswith(('.yml', '.yaml', '.json')) or '.' not in name:
                out.append(os.path.join(folder, name))
    return out


def _defines(path, key):
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and key in data else None


def inventory_copy(inventory_dir, proposal, advice):
    """Every file of the inventory under inventory/, the proposal replacing gpushare_workloads
    and each host's gpushare_node where they are defined (or in new files)."""
    base = os.path.abspath(inventory_dir)
    replaced = {}
    note = '# gpushare.cluster.usage_advisor replaced %s here (comments of this file were dropped).\n'
    group_file = None
    for path in _yaml_files(base, 'group_vars'):
        data = _defines(path, 'gpushare_workloads')
        if data is not None:
            group_file = path
            data['gpushare_workloads'] = proposal['workloads']
            replaced[path] = '---\n' + note % 'gpushare_workloads' + render_advice.to_yaml(data)
    if group_file is None:
        target = os.path.join(base, 'group_vars', 'all')
        target = target + '.yml' if os.path.isfile(target + '.yml') else os.path.join(target, 'gpushare-advised.yml')
        existing = _defines(target, 'gpushare_workloads') if os.path.isfile(target) else None
        data = existing or {}
        data['gpushare_workloads'] = proposal['workloads']
        replaced[target] = '---\n' + note % 'gpushare_workloads' + render_advice.to_yaml(data)
    for host, node in proposal['nodes'].items():
        found = None
        for path in _yaml_files(base, 'host_vars'):
            rel = os.path.relpath(path, os.path.join(base, 'host_vars'))
            owner = rel.split(os.sep)[0]
            if owner in (host, host + '.yml', host + '.yaml'):
                data = _defines(path, 'gpushare_node')
                if data is not None:
                    found = path
                    data['gpushare_node'] = node
                    replaced[path] = '---\n' + note % 'gpushare_node' + render_advice.to_yaml(data)
        if found is None:
            folder = os.path.join(base, 'host_vars', host)
            target = os.path.join(folder, 'gpushare-advised.yml') if os.path.isdir(folder) else folder + '.yml'
            replaced[target] = render_advice.node_file(host, node)
    files = []
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not _skipped(folder, d))
        for name in sorted(names):
            path = os.path.join(folder, name)
            if path not in replaced:
                files.append({'path': 'inventory/' + os.path.relpath(path, base), 'link': path})
    for path, content in sorted(replaced.items()):
        files.append({'path': 'inventory/' + os.path.relpath(path, base), 'content': content, 'private': True})
    del advice
    return files


def write_files(dest, files, check_mode):
    """Write FILES under DEST: C(content) at 0644, or 0600 in directories of 0700 when
    C(private) (a rewritten inventory file keeps that file's other variables), C(link) as a
    symbolic link. A path whose content, mode or link is already right is left alone; an
    earlier copy or link in its place is replaced, never written through. True when anything
    changed (or would, in check mode)."""
    changed = False
    for entry in files:
        target = os.path.join(dest, entry['path'])
        private = entry.get('private') or 'link' in entry
        folder = os.path.dirname(target)
        changed |= _directory(dest, folder, 0o700 if private else 0o755, check_mode)
        if 'link' in entry:
            if os.path.islink(target) and os.readlink(target) == entry['link']:
                continue
            changed = True
            if not check_mode:
                if os.path.lexists(target):
                    os.unlink(target)
                os.symlink(entry['link'], target)
            continue
        mode = 0o600 if private else 0o644
        data = entry['content'].encode()
        if not os.path.islink(target) and os.path.isfile(target):
            with open(target, 'rb') as f:
                same = f.read() == data
            if same and (os.stat(target).st_mode & 0o777) == mode:
                continue
        changed = True
        if not check_mode:
            handle, temporary = tempfile.mkstemp(dir=folder, prefix='.advice-')
            try:
                with os.fdopen(handle, 'wb') as f:
                    f.write(data)
                os.chmod(temporary, mode)
                os.replace(temporary, target)
            except BaseException:
                if os.path.exists(temporary):
                    os.unlink(temporary)
                raise
    return changed


def _directory(dest, folder, mode, check_mode):
    """Make FOLDER (and those between DEST and it) with MODE; True when one was made or its
    mode changed. DEST itself keeps 0755 unless made here."""
    changed = False
    path = os.path.abspath(folder)
    chain = []
    while True:
        chain.append(path)
        if path == os.path.abspath(dest) or os.path.dirname(path) == path:
            break
        path = os.path.dirname(path)
    for path in reversed(chain):
        wanted = 0o755 if path == os.path.abspath(dest) else mode
        if not os.path.isdir(path):
            changed = True
            if not check_mode:
                os.makedirs(path, mode=wanted)
                os.chmod(path, wanted)
        elif path != os.path.abspath(dest) and (os.stat(path).st_mode & 0o777) != wanted:
            changed = True
            if not check_mode:
                os.chmod(path, wanted)
    return changed


def summary(advice, change_lines, plan_check):
    window = advice['window']
    lines = ['Advice from %s, %s to %s (%s days)' % (advice['source'], window['from'], window['until'], window['days'])]
    for s in advice['services']:
        if s.get('status') == 'ok':
            lines.append('%-20s %-12s %-9s -> %s' % (s['name'], s.get('team') or '?', s['kind'],
                                                     render_advice.choice_text(s)))
        else:
            lines.append('%-20s %-12s %s: %s' % (s['name'], s.get('team') or '?', s.get('status'), s.get('reason', '')))
    for w in advice['windows']:
        lines.append('window %s %s-%s: %s %s%s' % (w['name'], w['from'], w['until'],
                                                   ', '.join('%s/%d' % tuple(g) for g in w['gpus']), w['mode'],
                                                   '' if w.get('proposed', True) else ' (kept as it is)'))
    for r in advice.get('repairs', []):
        lines.append('repair %s: %s' % (r['rule'], r['did']))
    for u in advice.get('unmatched', []):
        lines.append('pods that match no workload: %s/%s (%d pods): %s' % (u['namespace'], u['name'], u['pods'],
                                                                           u['reason']))
    lines.append('planner: %s' % plan_check)
    lines += ['change: ' + c for c in change_lines] or [render_advice.no_change_text(advice)]
    return lines


if __name__ == '__main__':
    main()
