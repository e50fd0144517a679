# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX job templates, surveys and sharing-window schedules from the Plan, and the checks
AWX applies when they are created (pure Python; playbooks/awx.yml applies the result with
the awx.awx modules).

The schedules come from the Plan's windows (``plan["windows"]``: name, from, until) in the
Plan's time zone (``plan["cluster"]["timezone"]``): one schedule per boundary time, passing
the state in force from that minute as an explicit ``gpushare_window`` (a window name or
``none``), so a schedule that fires a few seconds early still applies the right state.

The checks follow what AWX refuses (awx/api/views for survey specs, awx/api/serializers.py
for schedules, AWX 24): a survey default must be one of its choices; a schedule's rule needs
DTSTART with a time zone and an INTERVAL, no SECONDLY, COUNT at most 999; its extra data may
only name survey variables (unless the template prompts for variables) and must answer the
required questions.
"""

from __future__ import annotations

import copy
import datetime
import re

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import CLOCK, time_zone
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import active_window

SURVEY_TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
RRULE_SHAPE = re.compile(r"^DTSTART(?P<tz>;TZID=[^:]+)?:(?P<start>\d{8}T\d{6}Z?)\s+RRULE:(?P<rule>\S+)$")

# What a person chooses when launching: the stages of site.yml as job templates.
STAGES = (
    {"key": "plan", "title": "plan", "playbook": "playbooks/plan.yml", "job_tags": "",
     "questions": ("window", "window_at"),
     "description": "Plan the GPU split from the inventory; writes plan.json, report.md, manifests (no server touched)"},
    {"key": "hosts", "title": "hosts and Kubernetes", "playbook": "playbooks/site.yml",
     "job_tags": "plan,host_prep,kubernetes", "questions": (),
     "description": "Host preparation and MicroK8s or kubeadm"},
    {"key": "gpu_stack", "title": "GPU stack", "playbook": "playbooks/site.yml",
     "job_tags": "plan,monitoring,gpu_operator,dra_driver,kueue", "questions": ("window", "render_only"),
     "description": "GPU Operator, DRA driver, Kueue and monitoring from the plan"},
    {"key": "window_switch", "title": "window switch", "playbook": "playbooks/site.yml",
     "job_tags": "plan,gpu_operator,kueue", "questions": ("window",),
     "description": "Apply the sharing window: run by the schedules at each window boundary"},
)


# Launch prompts of every template: a person picks check mode; variables other than the
# survey's are not accepted (so a schedule's extra data is checked against it). The inventory
# is fixed whenever credentials are attached: with an inventory prompt, whoever may launch and
# use any inventory would run the admin kubeconfig and the machine credential against hosts
# and variables of their choosing (ansible_python_interpreter, ansible_host, a
# gpushare_kubeconfig); only a template without credentials asks for the inventory.
# playbooks/awx.yml writes these as literals (tests/unit/test_awx_schedules.py keeps them in step).
# The inventory is never asked for: a template runs on the collection's own inventory, so its
# credentials (the Machine credential, the admin kubeconfig) cannot be pointed at hosts and
# variables of the launcher's choosing.
PROMPTS = {"ask_inventory_on_launch": False, "ask_job_type_on_launch": True, "ask_variables_on_launch": False}
INVENTORY_PROMPT = "ask_inventory_on_launch"


def window_boundaries(plan: dict) -> list[dict]:
    """Each distinct boundary time of the Plan's windows (HH:MM in the Plan's time zone) with
    the state in force from that minute: ``[{"at": "07:00", "window": "none"}, ...]``."""
    times = sorted({w[k] for w in plan["windows"] for k in ("from", "until")})
    boundaries = []
    for clock in times:
        window = active_window(plan, clock)
        boundaries.append({"at": clock, "window": window["name"] if window else "none"})
    return boundaries


def daily_rrule(clock: str, timezone: str, start_date: str) -> str:
    """AWX's rule for "every day at ``clock`` in ``timezone``" starting on ``start_date``:
    ``DTSTART;TZID=Europe/Berlin:20260101T190000 RRULE:FREQ=DAILY;INTERVAL=1``. The time is
    wall-clock time in the zone, so the run stays at 19:00 local across daylight saving."""
    if not isinstance(clock, str) or not CLOCK.match(clock):
        raise ValueError("clock must be a time of day HH:MM, got %r" % (clock,))
    if not isinstance(start_date, str) or not DATE.match(start_date):
        raise ValueError("start_date must be a date YYYY-MM-DD, got %r (e.g. '2026-01-01')" % (start_date,))
    try:
        datetime.date.fromisoformat(start_date)
        time_zone(timezone)
    except (ValueError, TypeError, OSError, LookupError) as exc:
        raise ValueError("daily_rrule(%r, %r, %r): %s" % (clock, timezone, start_date, exc)) from exc
    return "DTSTART;TZID=%s:%sT%s00 RRULE:FREQ=DAILY;INTERVAL=1" % (
        timezone, start_date.replace("-", ""), clock.replace(":", ""))


def _questions(plan: dict) -> dict:
    """The survey questions. None is required: AWX refuses a launch that leaves a required
    question unanswered, default or not (``'gpushare_window' value missing`` for an API launch
    with no extra vars, awx/main/models/mixins.py ``_survey_element_validation``), and gives an
    unanswered optional question its default (``_update_unified_job_kwargs``)."""
    names = [w["name"] for w in plan["windows"]]
    return {
        "window": {
            "question_name": "Sharing window",
            "question_description": "auto: the window in force now (%s); none: the base state; or a window by name"
                                    % plan["cluster"]["timezone"],
            "variable": "gpushare_window", "type": "multiplechoice", "required": False,
            "choices": ["auto", "none"] + names, "default": "auto"},
        "window_at": {
            "question_name": "Preview the state at",
            "question_description": "With window auto: the state in force at this time instead of now",
            "variable": "gpushare_window_at", "type": "multiplechoice", "required": False,
            "choices": [b["at"] for b in window_boundaries(plan)]},
        "render_only": {
            "question_name": "Render only",
            "question_description": "true: write every Helm value file and object to the project's build/plan/rendered, apply nothing",
            "variable": "gpushare_render_only", "type": "multiplechoice", "required": False,
            "choices": ["false", "true"], "default": "false"},
    }


def _settings(settings: dict) -> dict:
    required = ("organization", "project", "inventory", "execution_environment", "name_prefix", "schedule_start")
    missing = [k for k in required if not settings.get(k)]
    if missing:
        raise ValueError("AWX settings missing: %s (got keys %s)" % (", ".join(missing), ", ".join(sorted(settings)) or "none"))
    return settings


def job_templates(plan: dict, settings: dict) -> list[dict]:
    """One job template per stage, with its survey, in the awx.awx.job_template module's terms."""
    settings = _settings(settings)
    questions = _questions(plan)
    templates = []
    for stage in STAGES:
        spec = [copy.deepcopy(questions[q]) for q in stage["questions"] if q != "window_at" or plan["windows"]]
        name = "%s %s" % (settings["name_prefix"], stage["title"])
        templates.append({
            "key": stage["key"], "name": name, "description": stage["description"],
            "organization": settings["organization"], "project": settings["project"],
            "inventory": settings["inventory"], "playbook": stage["playbook"], "job_type": "run",
            "job_tags": stage["job_tags"], "execution_environment": settings["execution_environment"],
            "credentials": list(settings.get("credentials") or []),
            **PROMPTS,
            "survey_enabled": bool(spec),
            "survey_spec": {"name": name, "description": stage["description"], "spec": spec},
        })
    return templates


def window_schedules(plan: dict, settings: dict) -> list[dict]:
    """One schedule per window boundary on the window-switch template, in the Plan's time zone."""
    settings = _settings(settings)
    zone = plan["cluster"]["timezone"]
    template = "%s window switch" % settings["name_prefix"]
    return [{
        "name": "%s: %s at %s" % (template, b["window"], b["at"]),
        "description": "Sharing window %s from %s %s (from the Plan)" % (b["window"], b["at"], zone),
        "unified_job_template": template,
        "organization": settings["organization"],
        "rrule": daily_rrule(b["at"], zone, settings["schedule_start"]),
        "extra_data": {"gpushare_window": b["window"]},
        "at": b["at"], "timezone": zone,
    } for b in window_boundaries(plan)]


def project_and_inventory_source(settings: dict) -> dict:
    """The project and the inventory source, decided before any AWX call.

    With ``project_scm_url`` a git project and an SCM inventory source reading
    ``inventory_source_path`` from it. Without, a manual project and no inventory source: AWX
    refuses an SCM inventory source on a manual project ("Cannot use manual project for
    SCM-based inventory.", InventorySourceSerializer in awx/api/serializers.py), and no other
    source type reads a file of the project, so ``notes`` says how to fill the inventory."""
    scm_url = settings.get("project_scm_url") or ""
    project = {"name": settings["project"], "scm_type": "git" if scm_url else "manual"}
    source_name = "%s from project" % settings["inventory"]
    if not scm_url:
        # A project switched from git to manual keeps its SCM source (AWX refuses to create
        # one on a manual project but accepts the project's update): the role removes it.
        return {"project": project, "inventory_source": None,
                "inventory_source_absent": {"name": source_name, "inventory": settings["inventory"]}, "notes": [
                    "No inventory source: the project is manual (gpushare_awx_project_scm_url is empty) and AWX refuses an "
                    "SCM inventory source on a manual project ('Cannot use manual project for SCM-based inventory'). Fill the "
                    "inventory %r once from the copy under AWX's projects root, e.g. in the awx-task container: awx-manage "
                    "inventory_import --inventory-name %s --source /var/lib/awx/projects/%s/%s; or set "
                    "gpushare_awx_project_scm_url for a git project with an inventory source."
                    % (settings["inventory"], settings["inventory"], settings.get("project_local_path") or "<local_path>",
                       settings.get("inventory_source_path") or "<inventory file>")]}
    return {"project": project, "notes": [], "inventory_source_absent": None, "inventory_source": {
        "name": source_name, "inventory": settings["inventory"], "source": "scm",
        "source_project": settings["project"], "source_path": settings.get("inventory_source_path") or ""}}


def awx_definitions(plan: dict, settings: dict) -> dict:
    """Job templates and schedules for AWX from the Plan, with what they were made from.

    One job template per stage (plan, hosts and Kubernetes, GPU stack, window switch) with its
    survey, and one schedule per sharing-window boundary on the window switch template, in the
    Plan's time zone. The Plan's time zone and windows come with them, so they can be checked
    offline (tests/awx/validate.py).

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        settings: the AWX names, a dict: ``organization``, ``project``, ``inventory``,
            ``execution_environment``, ``name_prefix`` and ``schedule_start`` (the schedules'
            first day, YYYY-MM-DD) are required; ``credentials`` (names), ``project_scm_url``
            (empty: a manual project), ``project_local_path`` and ``inventory_source_path`` are
            optional.

    Returns:
        A dict: ``plan`` (its ``timezone`` and ``windows``), ``job_templates`` and ``schedules``
        (lists of dicts in the awx.awx.job_template and awx.awx.schedule modules' terms),
        ``project`` (``name``, ``scm_type`` git or manual), ``inventory_source`` (in the
        awx.awx.inventory_source module's terms, ``None`` for a manual project),
        ``inventory_source_absent`` (for a manual project the ``name`` and ``inventory`` of the
        source a git project had, removed by the role; ``None`` for a git project) and ``notes``
        (why there is none and how to fill the inventory then), a list of strings.
    """
    return {"plan": {"timezone": plan["cluster"]["timezone"],
                     "windows": [{k: w[k] for k in ("name", "from", "until")} for w in plan["windows"]]},
            "job_templates": job_templates(plan, settings), "schedules": window_schedules(plan, settings),
            **project_and_inventory_source(_settings(settings))}


# --------------------------------------------------------------------------- AWX's checks

def survey_problems(template: dict) -> list[str]:
    """What AWX refuses in a job template's survey spec."""
    where = "job template %r survey" % template.get("name")
    spec = template.get("survey_spec") or {}
    problems = []
    if template.get("survey_enabled") and not spec.get("spec"):
        problems.append("%s: survey_enabled but no questions" % where)
    seen = set()
    for i, q in enumerate(spec.get("spec") or []):
        at = "%s question %d (%s)" % (where, i, q.get("variable"))
        for key in ("question_name", "variable", "type"):
            if not q.get(key):
                problems.append("%s: %s missing" % (at, key))
        if q.get("variable") in seen:
            problems.append("%s: variable used twice" % at)
        seen.add(q.get("variable"))
        if q.get("type") not in SURVEY_TYPES:
            problems.append("%s: type %r is not one of %s" % (at, q.get("type"), ", ".join(SURVEY_TYPES)))
        if not isinstance(q.get("required", False), bool):
            problems.append("%s: required must be true or false, got %r" % (at, q.get("required")))
        if q.get("type") in ("multiplechoice", "multiselect"):
            choices = q.get("choices")
            if isinstance(choices, str):
                choices = choices.split("\n")
            if not choices:
                problems.append("%s: a choice question needs choices" % at)
                continue
            if len(set(choices)) != len(choices):
                problems.append("%s: choices repeat: %s" % (at, choices))
            default = q.get("default")
            if default in (None, ""):
                continue
            values = default.split("\n") if q["type"] == "multiselect" and isinstance(default, str) else [default]
            for value in values if isinstance(values, list) else [values]:
                if value not in choices:
                    problems.append("%s: default %r is not one of its choices %s" % (at, value, choices))
    return problems


def rrule_problems(rrule: str) -> list[str]:
    """What AWX refuses in a schedule rule (and a rule without a time zone, which AWX reads as UTC)."""
    if not isinstance(rrule, str):
        return ["rrule must be a string, got %r" % (rrule,)]
    match = RRULE_SHAPE.match(rrule.strip())
    if not match:
        return ["rrule %r is not 'DTSTART;TZID=<zone>:YYYYMMDDTHHMMSS RRULE:...'" % rrule]
    problems = []
    if not match.group("tz") and not match.group("start").endswith("Z"):
        problems.append("rrule %r: DTSTART has no time zone (add ;TZID=<zone>)" % rrule)
    elif not match.group("tz"):
        problems.append("rrule %r: DTSTART is UTC; give the Plan's time zone (;TZID=<zone>) so runs follow local time" % rrule)
    else:
        try:
            time_zone(match.group("tz")[len(";TZID="):])
        except (ValueError, OSError, LookupError):
            problems.append("rrule %r: unknown time zone %r" % (rrule, match.group("tz")[len(";TZID="):]))
    parts = dict(p.split("=", 1) for p in match.group("rule").split(";") if "=" in p)
    if "INTERVAL" not in parts:
        problems.append("rrule %r: INTERVAL is required" % rrule)
    if parts.get("FREQ") in (None, "SECONDLY"):
        problems.append("rrule %r: FREQ %r is not allowed" % (rrule, parts.get("FREQ")))
    if "COUNT" in parts and not (parts["COUNT"].isdigit() and int(parts["COUNT"]) <= 999):
        problems.append("rrule %r: COUNT must be at most 999" % rrule)
    return problems


def schedule_problems(schedule: dict, template: dict) -> list[str]:
    """What AWX refuses in a schedule of ``template``: its rule, and extra data that names a
    variable the survey does not ask (without ask_variables_on_launch) or leaves a required
    question unanswered."""
    where = "schedule %r" % schedule.get("name")
    problems = ["%s: %s" % (where, p) for p in rrule_problems(schedule.get("rrule"))]
    spec = (template.get("survey_spec") or {}).get("spec") or [] if template.get("survey_enabled") else []
    asked = {q["variable"]: q for q in spec}
    data = schedule.get("extra_data") or {}
    if not template.get("ask_variables_on_launch"):
        for name in sorted(set(data) - set(asked)):
            problems.append("%s: extra_data names %r, which is not a survey variable of %r (survey: %s)"
                            % (where, name, template.get("name"), ", ".join(sorted(asked)) or "none"))
    for name, q in asked.items():
        if q.get("required") and name not in data:
            problems.append("%s: required survey question %r is not answered in extra_data" % (where, name))
        elif name in data and q.get("type") == "multiplechoice" and data[name] not in q.get("choices", []):
            problems.append("%s: %s=%r is not one of %s" % (where, name, data[name], q.get("choices")))
    return problems


def launch_problems(template: dict, answers: dict | None = None) -> list[str]:
    """What AWX answers with 400 when ``template`` is launched with ``answers`` as extra vars
    (an API launch, awx.awx.job_launch): a required question not answered, whatever its
    default, or a choice outside the question's choices (awx/main/models/mixins.py,
    ``_survey_element_validation``)."""
    spec = (template.get("survey_spec") or {}).get("spec") or [] if template.get("survey_enabled") else []
    answers = answers or {}
    problems = []
    for q in spec:
        where = "job template %r launched with extra vars %s" % (template.get("name"), sorted(answers) or "none")
        if q.get("required") and q["variable"] not in answers:
            problems.append("%s: AWX refuses it, \"'%s' value missing\" (make the question optional with a default)"
                            % (where, q["variable"]))
        elif q["variable"] in answers and q.get("type") == "multiplechoice" and answers[q["variable"]] not in q.get("choices", []):
            problems.append("%s: %s=%r is not one of %s" % (where, q["variable"], answers[q["variable"]], q.get("choices")))
    return problems


def prompt_problems(template: dict) -> list[str]:
    """A template that attaches credentials and still asks for the inventory at launch."""
    if template.get(INVENTORY_PROMPT) and template.get("credentials"):
        names = ", ".join(template["credentials"])
        return ["job template %r: attaches credentials %s and asks for the inventory at launch; whoever may "
                "launch it could point them at any inventory and its variables. Fix: %s false (the "
                "template's own inventory %r)" % (template.get("name"), names, INVENTORY_PROMPT, template.get("inventory"))]
    return []


def definition_problems(definitions: dict) -> list[str]:
    """Every problem of the job templates' surveys, the schedules and the inventory source, [] when AWX accepts them all.

    The checks follow AWX 24's survey, launch, schedule and inventory source validation:
    survey defaults among their choices, every template launchable through the API with no
    extra vars (no required question), schedules' extra data answering their template's
    survey, rules with a DTSTART in a time zone and an INTERVAL, no SCM inventory source on a
    manual project; and no template both attaches credentials and asks for its inventory at
    launch.

    Args:
        definitions: the result of ``awx_definitions``, a dict with ``job_templates`` and
            ``schedules`` (and optionally ``project`` and ``inventory_source``).

    Returns:
        One message per problem, naming the template, schedule or inventory source, a list of
        strings; empty when AWX accepts them all.
    """
    templates = {t["name"]: t for t in definitions.get("job_templates", [])}
    problems = [p for t in templates.values() for p in survey_problems(t) + prompt_problems(t)]
    # A person or a script launching through the API passes nothing: the defaults must do.
    problems += [p for t in templates.values() for p in launch_problems(t)]
    source, project = definitions.get("inventory_source"), definitions.get("project") or {}
    if source and source.get("source") == "scm" and project.get("scm_type") == "manual":
        problems.append("inventory source %r: its project %r is manual, and AWX refuses an SCM inventory source on a "
                        "manual project ('Cannot use manual project for SCM-based inventory'); give the project a git "
                        "URL (gpushare_awx_project_scm_url) or make no inventory source" % (source.get("name"), project.get("name")))
    for schedule in definitions.get("schedules", []):
        template = templates.get(schedule.get("unified_job_template"))
        if template is None:
            problems.append("schedule %r: job template %r is not defined (templates: %s)"
                            % (schedule.get("name"), schedule.get("unified_job_template"), ", ".join(sorted(templates))))
            continue
        problems.extend(schedule_problems(schedule, template))
    return problems


def launch_extra_vars(template: dict, answers: dict | None = None) -> dict:
    """The extra vars AWX gives a job of ``template``: survey defaults, then ``answers``
    (a person's survey answers or a schedule's extra data)."""
    spec = (template.get("survey_spec") or {}).get("spec") or [] if template.get("survey_enabled") else []
    extra = {q["variable"]: q["default"] for q in spec if q.get("default") not in (None, "")}
    extra.update(answers or {})
    return extra


__all__ = ["STAGES", "window_boundaries", "daily_rrule", "job_templates", "window_schedules", "project_and_inventory_source",
           "awx_definitions", "survey_problems", "rrule_problems", "schedule_problems", "launch_problems", "prompt_problems",
           "definition_problems", "launch_extra_vars"]
