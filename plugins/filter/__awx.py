# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Internal filters of playbooks/awx.yml (the file name starts with ``__``: ansible-doc does not
list them, they are not the collection's API; docs/architecture.md, "Public surface"): AWX job
templates, surveys and window schedules from the Plan (plugins/module_utils/awx/awx_schedules.py),
e.g. ``{{ plan | gpushare.cluster.awx_definitions(settings) }}``, and the problems AWX would refuse them for
(``awx_problems``); and what roles/awx decides from AWX's answers
(plugins/module_utils/awx/awx_preflight.py): the named objects AWX lacks before the first write
(``awx_named_object_problems``) and what to do with the project before anything uses it
(``awx_project_step``).

The schedules' rules come from ``awx_schedules.daily_rrule``, which stands in for awx.awx's
``schedule_rrule`` lookup (it fails on ansible-core 2.19 in awx.awx 24.6.1).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.awx import awx_preflight, awx_schedules
from ansible_collections.gpushare.cluster.plugins.plugin_utils.json_filter import json_filter

FUNCTIONS = {
    "awx_definitions": awx_schedules.awx_definitions,
    "awx_problems": awx_schedules.definition_problems,
    "awx_named_object_problems": awx_preflight.named_object_problems,
    "awx_project_step": awx_preflight.project_step,
}


class FilterModule:
    """awx_schedules and awx_preflight functions as filters."""

    def filters(self):
        """Filter name to filter function."""
        return {name: json_filter(name, function, (ValueError, KeyError, TypeError))
                for name, function in FUNCTIONS.items()}
