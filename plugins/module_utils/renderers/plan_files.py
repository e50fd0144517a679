# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan action makes of a Plan for a person: the files of the plan directory
(plan.json, report.md, split.svg, manifests/, changes.md, changes.json, teams/) and the
summary plan.yml prints.

Each file is rendered here once, whoever writes it. A renderer that raises is a bug, never a
problem of the inventory (the planner has refused those already): RenderCrash names what was
being rendered, so the plan task can say so instead of failing without a word.
"""

from __future__ import annotations

import json
import os

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import mig_planner
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import (
    APPLIED_PLAN, PLAN_FILE, change_lines, has_changes, recorded_against)
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import against as previous_against
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import (
    render_manifests, render_report, render_svg, render_teams)


class RenderCrash(Exception):
    """A renderer raised ``error`` while making ``what`` (e.g. "the report (report.md)")."""

    def __init__(self, what: str, error: BaseException):
        super().__init__("%s: %s: %s" % (what, type(error).__name__, error))
        self.what = what
        self.error = error


def rendering(what: str, function, *args):
    """``function(*args)``; any exception it raises becomes RenderCrash(what, it)."""
    try:
        return function(*args)
    except Exception as error:  # pylint: disable=broad-exception-caught  # any renderer bug, named
        raise RenderCrash(what, error) from error


def plan_json(plan: dict) -> str:
    """plan.json's text (docs/plan-format.md)."""
    return json.dumps(plan, indent=2, sort_keys=False) + "\n"


def plan_files(plan: dict, changes: dict, gpu_operator_namespace: str = names.GPU_OPERATOR_NAMESPACE) -> list[dict]:
    """[{path, content}] of the plan directory, paths relative to it. ``changes`` (the plan's
    changes against the previous one, changes.plan_changes) is for the files that report them."""
    files = [{"path": "plan.json", "content": rendering("plan.json", plan_json, plan)},
             {"path": "report.md", "content": rendering("the report (report.md)", render_report.report_markdown, plan,
                                                        changes)},
             {"path": "split.svg", "content": rendering("the picture (split.svg)", render_svg.render_svg, plan)},
             {"path": "changes.md", "content": rendering("the changes (changes.md)", render_report.changes_markdown,
                                                         changes)},
             {"path": "changes.json", "content": rendering("the changes (changes.json)", changes_json, changes)}]
    files += [{"path": "manifests/" + f["path"], "content": f["content"]}
              for f in rendering("the manifests (manifests/)", render_manifests.manifest_files, plan, gpu_operator_namespace)]
    files += rendering("the team files (teams/)", render_teams.team_files, plan, changes)
    return files + rendering("the applied plan (%s)" % APPLIED_PLAN, _baseline, changes)


def changes_json(changes: dict) -> str:
    """changes.json: what the plan changes against the applied plan (``against`` names it).
    With nothing to list (a first plan, or the applied plan again) the same short text, so a
    second run of an unchanged inventory writes nothing."""
    if not (changes["previous"] and has_changes(changes)):
        return json.dumps({"pending": False}, indent=2) + "\n"
    return json.dumps(dict({k: v for k, v in changes.items() if k != "known_labels"}, against=recorded_against(changes),
                           pending=True), indent=2) + "\n"


def _baseline(changes: dict) -> list[dict]:
    """No plan recorded as applied yet (changes.previous_plan_path read the last plan.json):
    that plan is kept as applied-plan.json, so its changes stay listed until site.yml applies
    a plan and records it there. The file is read again here, before the new plan.json
    replaces it, and kept only if it is still the text the changes were made against."""
    against = changes.get("against") or {}
    path = against.get("file")
    if not has_changes(changes):
        return []       # nothing pending: the next run reads the same plan.json
    if not path or os.path.basename(path) != PLAN_FILE or os.path.exists(os.path.join(os.path.dirname(path), APPLIED_PLAN)):
        return []       # read from the applied plan, or one is recorded: never replaced here
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return []
    return [{"path": APPLIED_PLAN, "content": text}] if previous_against(path, text) == against else []


def summary_lines(plan: dict, changes: dict, window: dict | None, clock: str | None) -> list[str]:
    """The lines plan.yml prints: the split and the team quotas, a MIG layout a safety time
    limit stopped, what changes against the previous plan, and the sharing window chosen
    (``window``, None for the base state; ``clock``, the HH:MM it was chosen for, or None)."""
    summary = rendering("the summary (the split table)", render_report.split_table, plan)
    # A MIG layout that a safety time limit stopped is kept, and said so in one line.
    summary += [line for line in [mig_planner.summary_line(plan.get("mig_solve"))] + [
        mig_planner.summary_line(w.get("mig_solve"), " inside window %s" % w["name"]) for w in plan["windows"]] if line]
    summary += change_lines(changes)
    summary.append("Team files: teams/<team>.md and ready manifests teams/<team>/<workload>.yaml for %s"
                   % ", ".join(t["name"] for t in plan["teams"]))
    if plan["windows"]:
        summary.append("Sharing window %s: %s" % (
            "in force at %s %s" % (clock, plan["cluster"]["timezone"]) if clock else "chosen",
            "%s (%s-%s)" % (window["name"], window["from"], window["until"]) if window else "none (the base state)"))
    return summary


def window_manifests(plan: dict, gpu_operator_namespace: str, window: dict | None) -> dict:
    """The objects to apply by stage, for ``window`` (None: the base state)."""
    return rendering("the manifests of the state applied", render_manifests.render, plan, gpu_operator_namespace, window)
