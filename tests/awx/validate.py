"""Offline validation of the AWX definitions playbooks/awx.yml writes (gpushare_awx_render_only):
what AWX would refuse, and when the schedules would really run.

    python tests/awx/validate.py build/awx/definitions.json [--days 400]

1. The checks AWX applies to surveys and schedules (awx_schedules.definition_problems).
2. Every schedule is at a boundary of a window of the Plan, in the Plan's time zone, and
   passes the state the Plan has in force from that minute.
3. The next runs, computed from the rule with dateutil's rrulestr as AWX computes them
   (forceset, DTSTART with a time zone required), land every day at that wall-clock time in
   the Plan's zone for ``--days`` days, across daylight-saving changes: one run per local
   day, none missing, none doubled; in a zone with daylight saving the UTC times move.
4. Every job template launches through the API with no extra vars (AWX refuses a launch that
   leaves a required survey question unanswered), and there is no SCM inventory source on a
   manual project (``--project git`` or ``manual`` also checks which one the role made).
Exits 1 with every problem listed; prints one line per schedule otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from dateutil.rrule import rrulestr

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / ".collections") not in sys.path:
    sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpushare.cluster.plugins.module_utils.awx.awx_schedules import definition_problems  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import time_zone  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window  # noqa: E402


def next_runs(rrule: str, count: int) -> list[datetime.datetime]:
    """The first ``count`` runs of ``rrule`` the way AWX's Schedule.rrulestr reads it: a rule
    set, and a DTSTART without a time zone refused."""
    rules = rrulestr(rrule, forceset=True)
    for rule in rules._rrule:  # pylint: disable=protected-access  # AWX checks the same attribute
        if rule._dtstart is None or rule._dtstart.tzinfo is None:  # pylint: disable=protected-access
            raise ValueError("%r: a valid TZID must be provided (AWX refuses naive DTSTART)" % rrule)
    runs = []
    for run in rules:
        runs.append(run)
        if len(runs) == count:
            break
    return runs


def run_problems(schedule: dict, plan: dict, days: int) -> tuple[list[str], dict]:
    """Problems of one schedule's runs, and figures for the report line."""
    where = "schedule %r" % schedule["name"]
    zone_name = plan["timezone"]
    zone = time_zone(zone_name)
    problems = []
    boundaries = {w[k] for w in plan["windows"] for k in ("from", "until")}
    if schedule["at"] not in boundaries:
        problems.append("%s: at %s is not a window boundary of the plan (%s)" % (where, schedule["at"], sorted(boundaries)))
    window = active_window(plan, schedule["at"])
    expected = window["name"] if window else "none"
    if schedule["extra_data"].get("gpushare_window") != expected:
        problems.append("%s: passes gpushare_window=%r, the plan has %r in force from %s"
                        % (where, schedule["extra_data"].get("gpushare_window"), expected, schedule["at"]))
    if ";TZID=%s:" % zone_name not in schedule["rrule"]:
        problems.append("%s: rule %r is not in the plan's time zone %s" % (where, schedule["rrule"], zone_name))
    try:
        runs = next_runs(schedule["rrule"], days)
    except ValueError as exc:
        return problems + ["%s: %s" % (where, exc)], {}
    local = [r.astimezone(zone) for r in runs]
    wrong = [r.isoformat() for r in local if r.strftime("%H:%M") != schedule["at"]]
    if wrong:
        problems.append("%s: %d runs not at %s %s, first %s" % (where, len(wrong), schedule["at"], zone_name, wrong[0]))
    dates = [r.date() for r in local]
    gaps = [(a, b) for a, b in zip(dates, dates[1:]) if (b - a).days != 1]
    if gaps:
        problems.append("%s: local days not consecutive (missing or doubled run) at %s" % (where, gaps[0]))
    offsets = sorted({r.utcoffset() for r in local})
    return problems, {"first": local[0].isoformat(), "last": local[-1].isoformat(), "runs": len(runs),
                      "utc_offsets": [str(o) for o in offsets]}


def validate(definitions: dict, days: int, expect_dst: bool = False, project: str | None = None) -> tuple[list[str], list[str]]:
    """(problems, report lines) of the definitions awx.yml rendered; with ``expect_dst``, a
    problem unless some schedule's runs cross a daylight-saving change (two UTC offsets); with
    ``project`` (git or manual), a problem unless the project is of that type, with an SCM
    inventory source exactly when it is git."""
    problems = list(definition_problems(definitions))
    lines = []
    if project:
        made = (definitions.get("project") or {}).get("scm_type")
        source = definitions.get("inventory_source")
        if made != project or bool(source) != (project == "git"):
            problems.append("expected a %s project %s an inventory source, got a %s project and inventory source %r"
                            % (project, "with" if project == "git" else "without", made, source))
        lines.append("project %s (%s); inventory source: %s" % (
            definitions["project"]["name"], made, source["source_path"] if source else " ".join(definitions["notes"])))
    offsets = set()
    plan = definitions["plan"]
    if plan["windows"] and not definitions["schedules"]:
        problems.append("the plan has windows %s but there are no schedules" % [w["name"] for w in plan["windows"]])
    for schedule in definitions["schedules"]:
        found, figures = run_problems(schedule, plan, days)
        problems.extend(found)
        if figures:
            offsets.add(len(figures["utc_offsets"]))
            lines.append("%s: %s; %d runs %s .. %s at %s %s, UTC offsets %s" % (
                schedule["name"], schedule["rrule"], figures["runs"], figures["first"][:10], figures["last"][:10],
                schedule["at"], plan["timezone"], ", ".join(figures["utc_offsets"])))
    if expect_dst and max(offsets, default=1) < 2:
        problems.append("no schedule's runs cross a daylight-saving change (zone %s)" % plan["timezone"])
    return problems, lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("definitions", type=Path)
    parser.add_argument("--days", type=int, default=400, help="runs per schedule to compute (one a day)")
    parser.add_argument("--expect-dst", action="store_true",
                        help="fail unless the runs cross a daylight-saving change (two UTC offsets)")
    parser.add_argument("--project", choices=("git", "manual"),
                        help="fail unless the project is of this type, with an inventory source exactly when git")
    args = parser.parse_args(argv)
    definitions = json.loads(args.definitions.read_text())
    problems, lines = validate(definitions, args.days, args.expect_dst, args.project)
    for line in lines:
        print(line)
    if problems:
        print("AWX definitions in %s: %d problem(s)" % (args.definitions, len(problems)), file=sys.stderr)
        for p in problems:
            print("  - " + p, file=sys.stderr)
        return 1
    print("AWX definitions in %s: %d job templates, %d schedules; AWX would accept them"
          % (args.definitions, len(definitions["job_templates"]), len(definitions["schedules"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
