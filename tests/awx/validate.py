"""Offline validation of the AWX definitions playbooks/awx.yml writes (gpushare_awx_render_only):
what AWX would refuse, and when the schedules would really run, checked against the
inventory itself, never through the collection's planner or AWX code.

    python tests/awx/validate.py build/awx/definitions.json --inventory INVENTORY_DIR [--days 400]

1. The expected schedules, from the inventory's YAML read here: the time zone
   (group_vars/all/*.yml, gpushare_policy.timezone, UTC when unset) and every GPU's
   ``schedule`` windows (host_vars/*.yml). One schedule per distinct window boundary, passing
   the window in force from that minute (from <= t < until, across midnight when until <=
   from), or "none". A boundary without a schedule, a schedule at no boundary or passing
   another state is a problem.
2. What AWX refuses: a schedule naming a job template the definitions lack; extra data that
   the template's survey does not ask (unless ask_variables_on_launch), or a choice it does
   not offer; a DTSTART without a time zone.
3. The next runs, computed from the rule with dateutil's rrulestr as AWX computes them
   (forceset, DTSTART with a time zone required), land every day at that wall-clock time in
   the inventory's zone for ``--days`` days, across daylight-saving changes: one run per
   local day, none missing, none doubled; in a zone with daylight saving the UTC times move.
4. Launches and the project, as AWX 24.6.1 answers them: a required survey question refuses
   an API launch with no extra vars ("'<variable>' value missing", whatever its default); an
   SCM inventory source on a manual project is refused ("Cannot use manual project for
   SCM-based inventory"); a template attaching credentials must not ask for the inventory at
   launch. ``--project git|manual`` also checks which project the role made.
Exits 1 with every problem listed; prints one line per schedule otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml
from dateutil.rrule import rrulestr


def inventory_windows(inventory: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """(time zone, {window name: (from, until)}) as the inventory's files write them."""
    policy: dict = {}
    for path in sorted((inventory / "group_vars" / "all").glob("*.yml")):
        policy.update((yaml.safe_load(path.read_text()) or {}).get("gpushare_policy") or {})
    windows: dict[str, tuple[str, str]] = {}
    for path in sorted((inventory / "host_vars").glob("*.yml")):
        node = (yaml.safe_load(path.read_text()) or {}).get("gpushare_node") or {}
        for gpu in node.get("gpus") or []:
            for window in gpu.get("schedule") or []:
                windows[window["name"]] = (window["from"], window["until"])
    return policy.get("timezone") or "UTC", windows


def in_force(windows: dict[str, tuple[str, str]], clock: str) -> str:
    """The window in force from ``clock`` (HH:MM strings compare as times), or "none"."""
    names = [name for name, (start, end) in windows.items()
             if ((start <= clock < end) if start < end else (clock >= start or clock < end))]
    assert len(names) <= 1, "windows %s overlap at %s" % (names, clock)
    return names[0] if names else "none"


def awx_refusals(schedule: dict, templates: dict) -> list[str]:
    """What AWX 24 refuses in a schedule: its template missing, extra data its survey does not
    ask (without ask_variables_on_launch) or a choice it does not offer."""
    where = "schedule %r" % schedule["name"]
    template = templates.get(schedule.get("unified_job_template"))
    if template is None:
        return ["%s: job template %r is not defined" % (where, schedule.get("unified_job_template"))]
    asked = {q["variable"]: q for q in (template.get("survey_spec") or {}).get("spec") or []} \
        if template.get("survey_enabled") else {}
    problems = []
    for name, value in (schedule.get("extra_data") or {}).items():
        question = asked.get(name)
        if question is None:
            if not template.get("ask_variables_on_launch"):
                problems.append("%s: extra_data %r is not asked by %r's survey" % (where, name, template["name"]))
        elif question.get("type") == "multiplechoice" and value not in question.get("choices", []):
            problems.append("%s: %s=%r is not one of %s" % (where, name, value, question.get("choices")))
    return problems


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


def run_problems(schedule: dict, zone_name: str, days: int) -> tuple[list[str], dict]:
    """Problems of one schedule's runs, and figures for the report line."""
    where = "schedule %r" % schedule["name"]
    zone = ZoneInfo(zone_name)
    problems = []
    if ";TZID=%s:" % zone_name not in schedule["rrule"]:
        problems.append("%s: rule %r is not in the inventory's time zone %s" % (where, schedule["rrule"], zone_name))
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


def launch_and_project_problems(definitions: dict, project: str | None) -> tuple[list[str], list[str]]:
    """Item 4 of the module docstring: (problems, report lines)."""
    problems, lines = [], []
    for t in definitions["job_templates"]:
        spec = (t.get("survey_spec") or {}).get("spec") or [] if t.get("survey_enabled") else []
        for q in spec:
            if q.get("required"):
                problems.append("job template %r: an API launch with no extra vars gets 400 \"'%s' value missing\""
                                % (t["name"], q["variable"]))
        if t.get("credentials") and t.get("ask_inventory_on_launch"):
            problems.append("job template %r attaches credentials %s and asks for the inventory at launch"
                            % (t["name"], t["credentials"]))
    made = (definitions.get("project") or {}).get("scm_type")
    source = definitions.get("inventory_source")
    if source and source.get("source") == "scm" and made == "manual":
        problems.append("inventory source %r on the manual project: AWX refuses it" % source.get("name"))
    if project:
        if made != project or bool(source) != (project == "git"):
            problems.append("expected a %s project %s an inventory source, got a %s project and inventory source %r"
                            % (project, "with" if project == "git" else "without", made, source))
        lines.append("project %s (%s); inventory source: %s" % (
            definitions["project"]["name"], made, source["source_path"] if source else " ".join(definitions["notes"])))
    return problems, lines


def validate(definitions: dict, inventory: Path, days: int, expect_dst: bool = False,
             project: str | None = None) -> tuple[list[str], list[str]]:
    """(problems, report lines) of the definitions awx.yml rendered for ``inventory``; with
    ``expect_dst``, a problem unless some schedule's runs cross a daylight-saving change; with
    ``project`` (git or manual), a problem unless the role made that project."""
    zone_name, windows = inventory_windows(inventory)
    expected = {clock: in_force(windows, clock) for bounds in windows.values() for clock in bounds}
    templates = {t["name"]: t for t in definitions["job_templates"]}
    problems, lines = launch_and_project_problems(definitions, project)
    offsets = set()
    got = {}
    for schedule in definitions["schedules"]:
        if schedule["at"] in got:
            problems.append("schedule %r: a second schedule at %s" % (schedule["name"], schedule["at"]))
        got[schedule["at"]] = schedule["extra_data"].get("gpushare_window")
        problems.extend(awx_refusals(schedule, templates))
        found, figures = run_problems(schedule, zone_name, days)
        problems.extend(found)
        if figures:
            offsets.add(len(figures["utc_offsets"]))
            lines.append("%s: %s; %d runs %s .. %s at %s %s, UTC offsets %s" % (
                schedule["name"], schedule["rrule"], figures["runs"], figures["first"][:10], figures["last"][:10],
                schedule["at"], zone_name, ", ".join(figures["utc_offsets"])))
    for clock in sorted(set(expected) | set(got)):
        if clock not in got:
            problems.append("no schedule at %s, where the inventory's windows switch to %r" % (clock, expected[clock]))
        elif clock not in expected:
            problems.append("a schedule at %s, which is no window boundary of the inventory (%s)" % (clock, sorted(expected)))
        elif got[clock] != expected[clock]:
            problems.append("the schedule at %s passes gpushare_window=%r; the inventory has %r in force from then"
                            % (clock, got[clock], expected[clock]))
    if expect_dst and max(offsets, default=1) < 2:
        problems.append("no schedule's runs cross a daylight-saving change (zone %s)" % zone_name)
    return problems, lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("definitions", type=Path)
    parser.add_argument("--inventory", type=Path, required=True, help="the inventory directory awx.yml was run on")
    parser.add_argument("--days", type=int, default=400, help="runs per schedule to compute (one a day)")
    parser.add_argument("--expect-dst", action="store_true",
                        help="fail unless the runs cross a daylight-saving change (two UTC offsets)")
    parser.add_argument("--project", choices=("git", "manual"), help="the kind of project the role must have made")
    args = parser.parse_args(argv)
    definitions = json.loads(args.definitions.read_text())
    problems, lines = validate(definitions, args.inventory, args.days, args.expect_dst, args.project)
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
