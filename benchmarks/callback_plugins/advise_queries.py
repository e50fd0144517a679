# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""For benchmarks/advise_prometheus.py: writes the usage_advisor task's ``queries`` and its
duration to the file named by GPUSHARE_ADVISE_QUERIES, so advise.yml runs with the default
stdout callback, as people run it."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r'''
name: advise_queries
type: aggregate
short_description: Write the usage_advisor task's queries to a file
description:
  - Writes C(queries) and the task's seconds to the file named by E(GPUSHARE_ADVISE_QUERIES).
requirements:
  - enabled with ANSIBLE_CALLBACKS_ENABLED=advise_queries
'''


class CallbackModule(CallbackBase):
    """The usage_advisor task's queries and duration, as JSON."""
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "advise_queries"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.started = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.started = time.monotonic()

    def _write(self, result):
        # pylint: disable=protected-access
        if not result._task.action.endswith("usage_advisor"):
            return
        with open(os.environ["GPUSHARE_ADVISE_QUERIES"], "w", encoding="utf-8") as handle:
            json.dump({"task_s": round(time.monotonic() - self.started, 2), "msg": result._result.get("msg"),
                       "queries": result._result.get("queries", [])}, handle)

    def v2_runner_on_ok(self, result):
        self._write(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result)
