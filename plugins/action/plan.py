# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpushare.cluster.plan (documented in plugins/modules/plan.py): the planner run on
the controller, in this process.

The inventory is read where Ansible holds it (the task's variables and hostvars), not copied
into module arguments, and the result holds what the roles read (plan, manifests, changes,
summary, window, written), not the files' text, which goes straight to ``dest``. At 1,000
servers the module's way (arguments to a module process, its JSON back, then a set_fact copy)
cost nine tenths of plan.yml's CPU (docs/performance.md, "plan.yml at fleet scale").
"""

from __future__ import annotations

import os
import tempfile
import traceback
from collections.abc import Mapping

from ansible.module_utils.basic import missing_required_lib
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpushare.cluster.plugins.module_utils.names import GPU_OPERATOR_NAMESPACE
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import plain
# Loaded here, in ansible-playbook's own process, for the tasks after the plan (preload).
from ansible_collections.gpushare.cluster.plugins.plugin_utils import preload  # noqa: F401  pylint: disable=unused-import

try:
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
    from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import CLOCK
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window, local_clock, plan_and_changes
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import PreviousPlanError, previous_plan_path
    from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.plan_files import (
        RenderCrash, plan_files, summary_lines, window_manifests)
    IMPORT_ERROR = None
except ImportError:
    IMPORT_ERROR = traceback.format_exc()

display = Display()

ARGUMENT_SPEC = dict(
    # raw: a conversion here would refuse a wrong shape without the inventory path; the
    # planner checks every shape and names the path (model.load_inventory).
    teams=dict(type='raw'),
    nodes=dict(type='raw'),
    workloads=dict(type='raw'),
    policy=dict(type='raw'),
    defined_variables=dict(type='list', elements='str'),
    gpu_operator_namespace=dict(type='str', default=GPU_OPERATOR_NAMESPACE),
    window=dict(type='str', default='auto'),
    at=dict(type='str'),
    dest=dict(type='path'),
    previous=dict(type='path'),
)

# option -> (inventory variable, its value when the inventory has none)
INVENTORY = {'teams': ('gpushare_teams', []), 'workloads': ('gpushare_workloads', []), 'policy': ('gpushare_policy', {})}
GPU_GROUP = 'gpushare_gpu_nodes'


class PlanFailed(Exception):
    """The task fails with ``msg`` and the result's other keys ``extra``."""

    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.result = dict(extra, failed=True, msg=msg)


class ActionModule(ActionBase):
    """Plans on the controller from the inventory (or the options given); writes ``dest``."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        # Plain strings for the scalar options (a message quotes them with %r).
        params.update(plain({k: v for k, v in params.items() if k not in INVENTORY and k != 'nodes'}))
        try:
            if IMPORT_ERROR:
                raise PlanFailed(missing_required_lib('PyYAML'), exception=IMPORT_ERROR)
            result.update(self._plan(params, task_vars or {}))
        except PlanFailed as failed:
            result.update(failed.result)
        return result

    def _variables(self, params, task_vars):
        """(the planner's variables, the gpushare_* names the inventory defines): each option
        given, else its inventory variable read here; plain JSON data, as a module gets it."""
        variables = {}
        for option, (name, default) in INVENTORY.items():
            value = params[option]
            if value is None:
                value = task_vars.get(name, default)
                # Templating 20,000 workloads costs seconds; a value without Jinja is its own result.
                value = value if static(value) else self._templar.template(value)
            variables[name] = value
        nodes = params['nodes']
        if nodes is None:
            # As the inventory_nodes filter, hostvars[host].gpushare_node, templated only where needed.
            hostvars, nodes = task_vars['hostvars'], {}
            for host in task_vars.get('groups', {}).get(GPU_GROUP, []):
                node = hostvars.raw_get(host).get('gpushare_node')
                nodes[host] = node if static(node) else hostvars[host].get('gpushare_node')
        variables['gpushare_nodes'] = nodes
        defined = params['defined_variables']
        if defined is None:
            # As query('ansible.builtin.varnames', '^gpushare_'), when the inventory is read here.
            defined = [name for name in task_vars if name.startswith('gpushare_')] if params['teams'] is None else []
        return plain(variables), plain(defined)

    def _plan(self, params, task_vars):
        variables, defined = self._variables(params, task_vars)
        dest = params['dest']
        # The applied plan when one is recorded, else the last plan.json (docs/day-two.md).
        previous = params['previous'] or (previous_plan_path(dest) if dest else None)
        try:
            plan, changes = plan_and_changes(variables, read_previous(previous), defined, previous)
        except PlanInvalid as invalid:
            raise PlanFailed(str(invalid), problems=[p.as_dict() for p in invalid.problems]) from None
        except PreviousPlanError as err:
            raise PlanFailed('%s: %s. The plan reads the last plan as the GPUs\' current state: delete the file to '
                             'plan from scratch, or set gpushare_policy.replan: optimal to ignore it' % (previous, err)) from None
        except ImportError:
            raise PlanFailed(missing_required_lib('scipy'), exception=traceback.format_exc()) from None
        except Exception as error:  # pylint: disable=broad-exception-caught  # a planner bug: say so
            raise PlanFailed(**crash('planning (plugins/module_utils/planners)', error)) from None
        window, clock = choose_window(params['window'], params['at'], plan)
        namespace = params['gpu_operator_namespace']
        try:
            files = plan_files(plan, changes, namespace)
            summary = summary_lines(plan, changes, window, clock)
            manifests = window_manifests(plan, namespace, window)
        except RenderCrash as err:
            raise PlanFailed(**crash('rendering ' + err.what, err.error)) from None
        written = write_files(dest, files, self._task.check_mode) if dest else []
        return dict(changed=bool(written), written=written, plan=plan, changes=changes, manifests=manifests,
                    summary=summary, window={k: window[k] for k in ('name', 'from', 'until')} if window else None)


def static(value):
    """Whether ``value`` holds no string with Jinja in it (``{{``, ``{%`` or ``{#``), so that
    templating it would give it back unchanged."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if '{{' in item or '{%' in item or '{#' in item:
                return False
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


def crash(stage, error):
    """The failed result's keys for ``error``, raised while ``stage``: what failed and that it
    is a bug to report, without the traceback (written to a file; printed too with -vvv)."""
    trace = ''.join(traceback.format_exception(type(error), error, error.__traceback__))
    lines = ['The plan failed while %s: %s: %s' % (stage, type(error).__name__, error),
             'This is a bug in gpushare.cluster, not a problem of the inventory; nothing was written or applied.']
    try:
        handle, path = tempfile.mkstemp(prefix='gpushare-plan-', suffix='.traceback')
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.write(trace)
        lines.append('Please report it with the traceback, written to %s (run with -vvv to print it here).' % path)
    except OSError:
        path = None
        lines.append('Please report it with the traceback (run with -vvv to print it here).')
    if display.verbosity >= 3:
        lines += trace.rstrip('\n').splitlines()
    return dict(msg='\n'.join(lines), crash={'stage': stage, 'error': type(error).__name__, 'message': str(error),
                                             'traceback_file': path})


def read_previous(path):
    """The text of the previous plan.json at ``path``, or None when there is none yet."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path, encoding='utf-8') as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise PlanFailed('%s: cannot read the previous plan (%s). Delete it to plan from scratch, or set '
                         'gpushare_policy.replan: optimal' % (path, err)) from None


def write_files(dest, files, check_mode):
    """Writes each file whose content differs under ``dest`` (not in check mode); returns their paths."""
    written = []
    made = set()        # directories made or found: one makedirs each, not one per team file
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
        if check_mode:
            continue
        try:
            directory = os.path.dirname(path)
            if directory not in made:
                os.makedirs(directory, mode=0o755, exist_ok=True)
                made.add(directory)
            handle, tmp = tempfile.mkstemp(dir=directory, prefix='.' + os.path.basename(path))
            with os.fdopen(handle, 'wb') as out:
                os.fchmod(handle, 0o644)
                out.write(content)
            os.replace(tmp, path)
        except OSError as err:
            raise PlanFailed('Cannot write the plan file %s: %s. Set gpushare_artifacts_dir (or gpushare_plan_dir) '
                             'to a writable directory.' % (path, err.strerror or err)) from None
    return written


def choose_window(wanted, clock, plan):
    """(window or None, the HH:MM it was chosen for or None) from the window and at options."""
    names = [w['name'] for w in plan['windows']]
    if wanted == 'none':
        return None, None
    if wanted != 'auto':
        if wanted not in names:
            raise PlanFailed('window %r is not a window of the plan; windows: %s (or auto, none)'
                             % (wanted, ', '.join(names) or 'none declared'))
        return next(w for w in plan['windows'] if w['name'] == wanted), None
    if clock is None:
        clock = local_clock(plan)
    elif not CLOCK.match(clock):
        raise PlanFailed('at must be a time of day HH:MM, not %r' % clock)
    return active_window(plan, clock), clock
