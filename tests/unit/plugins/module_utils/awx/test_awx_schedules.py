"""AWX job templates, surveys and window schedules from the Plan (module_utils/awx_schedules.py,
filter plugin plugins/filter/__awx.py) and the offline checks of tests/awx/validate.py."""

from __future__ import annotations

import copy
import datetime
import importlib
import sys

import pytest

from inventories import ROOT  # noqa: E402
for extra in (ROOT / "tests" / "awx",):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils.awx import awx_schedules as awx  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402
from inventories import EXAMPLE_NAMES, example_day, load_example  # noqa: E402
import validate  # noqa: E402

FILTERS = importlib.import_module("ansible_collections.gpushare.cluster.plugins.filter.__awx").FilterModule().filters()
SETTINGS = {"organization": "Default", "project": "gpushare", "inventory": "gpushare",
            "execution_environment": "gpushare execution environment", "name_prefix": "gpushare",
            "schedule_start": "2026-01-01", "credentials": ["gpu servers"]}


def _plan(timezone: str | None = None) -> dict:
    variables = example_day()
    if timezone:
        variables["gpushare_policy"]["timezone"] = timezone
    return build_plan(variables)


def _definitions(timezone: str | None = None) -> dict:
    return awx.awx_definitions(_plan(timezone), SETTINGS)


EXAMPLE_DIR = ROOT / "inventory-examples" / "four-gpu-server"


@pytest.fixture(name="berlin_inventory")
def fixture_berlin_inventory(tmp_path):
    """The example inventory's files with timezone: Europe/Berlin (what validate.py reads)."""
    import shutil
    import yaml
    inv = tmp_path / "four-gpu-server"
    shutil.copytree(EXAMPLE_DIR, inv, ignore=shutil.ignore_patterns("artifacts"))
    policy = inv / "group_vars" / "all" / "policy.yml"
    data = yaml.safe_load(policy.read_text())
    data["gpushare_policy"]["timezone"] = "Europe/Berlin"
    policy.write_text(yaml.safe_dump(data))
    return inv


def test_boundaries_are_the_plans_windows_with_the_state_in_force():
    plan = _plan()
    assert [(w["name"], w["from"], w["until"]) for w in plan["windows"]] == [("night", "19:00", "07:00")]
    assert awx.window_boundaries(plan) == [{"at": "07:00", "window": "none"}, {"at": "19:00", "window": "night"}]


def test_adjacent_windows_give_one_schedule_per_boundary_with_the_next_state():
    plan = copy.deepcopy(_plan())
    night = plan["windows"][0]
    plan["windows"] = [dict(night, name="evening", **{"from": "17:00", "until": "19:00"}), night]
    assert awx.window_boundaries(plan) == [
        {"at": "07:00", "window": "none"}, {"at": "17:00", "window": "evening"}, {"at": "19:00", "window": "night"}]


def test_schedules_come_from_the_plan_in_its_time_zone():
    schedules = _definitions("Europe/Berlin")["schedules"]
    assert [(s["rrule"], s["extra_data"]) for s in schedules] == [
        ("DTSTART;TZID=Europe/Berlin:20260101T070000 RRULE:FREQ=DAILY;INTERVAL=1", {"gpushare_window": "none"}),
        ("DTSTART;TZID=Europe/Berlin:20260101T190000 RRULE:FREQ=DAILY;INTERVAL=1", {"gpushare_window": "night"}),
    ]
    assert {s["unified_job_template"] for s in schedules} == {"gpushare window switch"}


def test_schedules_pass_an_explicit_window_never_auto():
    for name in EXAMPLE_NAMES:
        for schedule in awx.awx_definitions(build_plan(load_example(name)), SETTINGS)["schedules"]:
            assert schedule["extra_data"]["gpushare_window"] != "auto", (name, schedule)


def test_every_example_inventory_gives_definitions_awx_accepts():
    for name in EXAMPLE_NAMES:
        definitions = awx.awx_definitions(build_plan(load_example(name)), SETTINGS)
        assert awx.definition_problems(definitions) == [], name
        assert [t["key"] for t in definitions["job_templates"]] == ["plan", "hosts", "gpu_stack", "window_switch"]


def test_window_survey_offers_the_plans_windows():
    plan_template = _definitions()["job_templates"][0]
    window = plan_template["survey_spec"]["spec"][0]
    assert window["variable"] == "gpushare_window" and window["required"] is False and window["default"] == "auto"
    assert window["choices"] == ["auto", "none", "night"] and window["default"] == "auto"
    assert plan_template["survey_spec"]["spec"][1]["choices"] == ["07:00", "19:00"]


def test_daily_rrule_and_its_errors():
    assert awx.daily_rrule("07:30", "America/New_York", "2026-03-01") == (
        "DTSTART;TZID=America/New_York:20260301T073000 RRULE:FREQ=DAILY;INTERVAL=1")
    for clock, zone, start, words in [("7:30", "UTC", "2026-01-01", "HH:MM"), ("07:30", "UTC", "01.01.2026", "YYYY-MM-DD"),
                                      ("07:30", "UTC", "2026-02-30", "2026-02-30"), ("07:30", "Mars/Base", "2026-01-01", "Mars/Base")]:
        with pytest.raises(ValueError, match=words):
            awx.daily_rrule(clock, zone, start)


def test_filters_wrap_the_functions_and_name_bad_input():
    assert set(FILTERS) == {"awx_definitions", "awx_problems", "awx_named_object_problems", "awx_project_step"}
    assert FILTERS["awx_definitions"](_plan(), SETTINGS) == _definitions()
    assert FILTERS["awx_problems"](_definitions()) == []
    with pytest.raises(AnsibleFilterError, match="awx_definitions: start_date must be a date YYYY-MM-DD, got '01.01.2026'"):
        FILTERS["awx_definitions"](_plan(), dict(SETTINGS, schedule_start="01.01.2026"))
    with pytest.raises(AnsibleFilterError, match="awx_definitions: AWX settings missing: schedule_start"):
        FILTERS["awx_definitions"](_plan(), {k: v for k, v in SETTINGS.items() if k != "schedule_start"})


def test_survey_default_outside_its_choices_is_refused():
    definitions = _definitions()
    definitions["job_templates"][0]["survey_spec"]["spec"][0]["default"] = "nights"
    assert definitions["job_templates"][0]["survey_spec"]["spec"][0]["variable"] == "gpushare_window"
    assert awx.definition_problems(definitions) == [
        "job template 'gpushare plan' survey question 0 (gpushare_window): default 'nights' is not one of its choices "
        "['auto', 'none', 'night']"]


@pytest.mark.parametrize("rrule, words", [
    ("DTSTART:20260101T190000 RRULE:FREQ=DAILY;INTERVAL=1", "DTSTART has no time zone"),
    ("DTSTART;TZID=UTC:20260101T190000 RRULE:FREQ=DAILY", "INTERVAL is required"),
    ("DTSTART;TZID=UTC:20260101T190000 RRULE:FREQ=SECONDLY;INTERVAL=1", "FREQ 'SECONDLY' is not allowed"),
    ("DTSTART;TZID=UTC:20260101T190000 RRULE:FREQ=DAILY;INTERVAL=1;COUNT=1000", "COUNT must be at most 999"),
    ("DTSTART;TZID=Nowhere/Land:20260101T190000 RRULE:FREQ=DAILY;INTERVAL=1", "unknown time zone 'Nowhere/Land'"),
    ("RRULE:FREQ=DAILY;INTERVAL=1", "is not 'DTSTART"),
])
def test_rules_awx_refuses(rrule, words):
    problems = awx.rrule_problems(rrule)
    assert len(problems) == 1 and words in problems[0], problems


def test_schedule_extra_data_only_survey_variables_and_required_answers():
    definitions = _definitions()
    night = definitions["schedules"][1]
    night["extra_data"] = {"gpushare_render_only": "true"}
    assert awx.definition_problems(definitions) == [
        "schedule 'gpushare window switch: night at 19:00': extra_data names 'gpushare_render_only', which is not a "
        "survey variable of 'gpushare window switch' (survey: gpushare_window)"]
    definitions["job_templates"][3]["survey_spec"]["spec"][0]["required"] = True
    assert ("schedule 'gpushare window switch: night at 19:00': required survey question 'gpushare_window' is not "
            "answered in extra_data") in awx.definition_problems(definitions)
    definitions["job_templates"][3]["survey_spec"]["spec"][0]["required"] = False
    night["extra_data"] = {"gpushare_window": "auto-ish"}
    assert awx.definition_problems(definitions) == [
        "schedule 'gpushare window switch: night at 19:00': gpushare_window='auto-ish' is not one of "
        "['auto', 'none', 'night']"]
    night["unified_job_template"] = "gpushare switch"
    assert "job template 'gpushare switch' is not defined" in awx.definition_problems(definitions)[0]


def test_prompting_for_variables_lets_a_schedule_name_others():
    definitions = _definitions()
    definitions["job_templates"][3]["ask_variables_on_launch"] = True
    definitions["schedules"][1]["extra_data"]["gpushare_render_only"] = "true"
    assert awx.definition_problems(definitions) == []


def test_launch_extra_vars_are_defaults_then_answers():
    gpu_stack = _definitions()["job_templates"][2]
    assert awx.launch_extra_vars(gpu_stack) == {"gpushare_window": "auto", "gpushare_render_only": "false"}
    assert awx.launch_extra_vars(gpu_stack, {"gpushare_window": "night"}) == {
        "gpushare_window": "night", "gpushare_render_only": "false"}


def test_next_runs_stay_at_local_boundaries_across_daylight_saving(berlin_inventory):
    """Europe/Berlin: 2026-03-29 and 2026-10-25 change the offset; the runs stay at 19:00 and
    07:00 local and move in UTC (as AWX computes them with dateutil)."""
    definitions = _definitions("Europe/Berlin")
    problems, lines = validate.validate(definitions, berlin_inventory, 400, expect_dst=True)
    assert problems == [] and len(lines) == 2
    assert validate.validate(_definitions(), EXAMPLE_DIR, 400, expect_dst=True)[0] == [
        "no schedule's runs cross a daylight-saving change (zone UTC)"]
    night = definitions["schedules"][1]
    runs = validate.next_runs(night["rrule"], 400)
    utc = {r.date().isoformat(): r.astimezone(datetime.timezone.utc).strftime("%H:%M") for r in runs}
    assert utc["2026-03-28"] == "18:00" and utc["2026-03-29"] == "17:00"
    assert utc["2026-10-24"] == "17:00" and utc["2026-10-25"] == "18:00"


def test_a_utc_rule_for_a_berlin_plan_is_caught(berlin_inventory):
    definitions = _definitions("Europe/Berlin")
    night = definitions["schedules"][1]
    night["rrule"] = "DTSTART;TZID=UTC:20260101T180000 RRULE:FREQ=DAILY;INTERVAL=1"
    problems = validate.validate(definitions, berlin_inventory, 400)[0]
    assert any("not in the inventory's time zone Europe/Berlin" in p for p in problems)
    assert any("runs not at 19:00 Europe/Berlin" in p for p in problems)


def test_a_naive_dtstart_is_refused_like_awx_does():
    with pytest.raises(ValueError, match="a valid TZID must be provided"):
        validate.next_runs("DTSTART:20260101T190000\nRRULE:FREQ=DAILY;INTERVAL=1", 3)


def test_a_schedule_that_passes_the_wrong_state_is_caught():
    definitions = _definitions()
    definitions["schedules"][0]["extra_data"]["gpushare_window"] = "night"
    problems = validate.validate(definitions, EXAMPLE_DIR, 10)[0]
    assert problems == ["the schedule at 07:00 passes gpushare_window='night'; the inventory has 'none' in force from then"]


def test_a_missing_or_extra_schedule_is_caught():
    """Against the inventory's own windows: the example day has one window, 19:00-07:00."""
    definitions = _definitions()
    morning = definitions["schedules"].pop(0)
    assert validate.validate(definitions, EXAMPLE_DIR, 10)[0] == [
        "no schedule at 07:00, where the inventory's windows switch to 'none'"]
    definitions["schedules"].append(dict(morning, at="08:00", rrule=morning["rrule"].replace("T0700", "T0800")))
    assert validate.validate(definitions, EXAMPLE_DIR, 10)[0][-2:] == [
        "no schedule at 07:00, where the inventory's windows switch to 'none'",
        "a schedule at 08:00, which is no window boundary of the inventory (['07:00', '19:00'])"]


def test_the_window_in_force_is_read_across_midnight():
    windows = {"night": ("19:00", "07:00"), "lunch": ("12:00", "13:00")}
    assert [validate.in_force(windows, t) for t in ("06:59", "07:00", "12:00", "13:00", "19:00", "23:59", "00:00")] == [
        "night", "none", "lunch", "none", "night", "night", "night"]


def test_a_schedule_naming_no_template_or_an_unoffered_choice_is_refused():
    definitions = _definitions()
    definitions["schedules"][1]["extra_data"]["gpushare_window"] = "weekend"
    definitions["schedules"][0]["unified_job_template"] = "gpushare switch"
    problems = validate.validate(definitions, EXAMPLE_DIR, 10)[0]
    assert "schedule 'gpushare window switch: none at 07:00': job template 'gpushare switch' is not defined" in problems
    assert any(p.startswith("schedule 'gpushare window switch: night at 19:00': gpushare_window='weekend' is not one of")
               for p in problems), problems


def test_role_literals_match_the_definitions():
    """The awx role (roles/awx/tasks/main.yml, run by playbooks/awx.yml) writes the prompts, job
    type and the schedules' extra-data keys as literals (so ansible-lint's args rule checks
    every option); they must be the definitions'."""
    import yaml
    play = yaml.safe_load((ROOT / "playbooks" / "awx.yml").read_text())[0]
    assert [t["ansible.builtin.import_role"]["name"] for t in play["tasks"]] == ["gpushare.cluster.awx"]
    tasks = yaml.safe_load((ROOT / "roles" / "awx" / "tasks" / "main.yml").read_text().replace("!unsafe ", ""))
    block = next(t for t in tasks if t.get("block") and "awx.awx.schedule" in str(t["block"]))["block"]
    job_template_tasks = [t["awx.awx.job_template"] for t in block if "awx.awx.job_template" in t]
    assert len(job_template_tasks) == 2
    definitions = _definitions()
    for task in job_template_tasks:
        assert {k: task[k] for k in awx.PROMPTS} == awx.PROMPTS
        assert {t["job_type"] for t in definitions["job_templates"]} == {task["job_type"]}
    assert {t["survey_enabled"] for t in definitions["job_templates"]} == {True, False}
    schedule_task = next(t["awx.awx.schedule"] for t in block if "awx.awx.schedule" in t)
    for schedule in definitions["schedules"]:
        assert set(schedule_task["extra_data"]) == set(schedule["extra_data"])


def test_every_template_launches_through_the_api_with_no_extra_vars():
    """AWX refuses a launch that leaves a required survey question unanswered, default or not
    (a real AWX 24.6.1 answered awx.awx.job_launch of "gpushare plan" with 400 "'gpushare_window'
    value missing"): every question is optional and a choice question has a default among its
    choices, so a launch with nothing passes AWX's check and gets the defaults."""
    for name in EXAMPLE_NAMES:
        for template in awx.awx_definitions(build_plan(load_example(name)), SETTINGS)["job_templates"]:
            for q in template["survey_spec"]["spec"]:
                assert q["required"] is False, (name, template["name"], q["variable"])
                if q["variable"] != "gpushare_window_at":      # the only question without a default: "now"
                    assert q["default"] in q["choices"], (name, template["name"], q["variable"])
            assert awx.launch_problems(template) == []
    definitions = _definitions()
    plan_template = definitions["job_templates"][0]
    assert awx.launch_extra_vars(plan_template) == {"gpushare_window": "auto"}
    plan_template["survey_spec"]["spec"][0]["required"] = True
    assert awx.definition_problems(definitions) == [
        "job template 'gpushare plan' launched with extra vars none: AWX refuses it, \"'gpushare_window' value "
        "missing\" (make the question optional with a default)"]
    assert awx.launch_problems(plan_template, {"gpushare_window": "auto"}) == []
    assert "is not one of" in awx.launch_problems(plan_template, {"gpushare_window": "dusk"})[0]


def test_a_manual_project_gets_no_inventory_source_and_says_how_to_fill_the_inventory():
    """AWX 24.6.1 refuses an SCM inventory source on a manual project ("Cannot use manual
    project for SCM-based inventory"), after the execution environment, project and inventory
    were made: the definitions decide it before any AWX call."""
    manual = _definitions()
    assert manual["project"] == {"name": "gpushare", "scm_type": "manual"}
    assert manual["inventory_source"] is None
    assert "awx-manage inventory_import --inventory-name gpushare" in manual["notes"][0]
    assert awx.definition_problems(manual) == []
    git = awx.awx_definitions(_plan(), dict(SETTINGS, project_scm_url="https://git.example.com/gpushare.git",
                                            inventory_source_path="inventories/prod/hosts.yml"))
    assert git["project"]["scm_type"] == "git" and git["notes"] == []
    assert git["inventory_source"] == {"name": "gpushare from project", "inventory": "gpushare", "source": "scm",
                                       "source_project": "gpushare", "source_path": "inventories/prod/hosts.yml"}
    manual["inventory_source"] = git["inventory_source"]
    assert awx.definition_problems(manual) == [
        "inventory source 'gpushare from project': its project 'gpushare' is manual, and AWX refuses an SCM inventory "
        "source on a manual project ('Cannot use manual project for SCM-based inventory'); give the project a git URL "
        "(gpushare_awx_project_scm_url) or make no inventory source"]


def test_templates_with_credentials_have_a_fixed_inventory():
    """With credentials attached (the Machine credential, the admin kubeconfig) no template asks
    for the inventory; without any, none does either."""
    with_credentials = _definitions()
    assert [t["ask_inventory_on_launch"] for t in with_credentials["job_templates"]] == [False] * len(awx.STAGES)
    assert {t["inventory"] for t in with_credentials["job_templates"]} == {"gpushare"}
    assert awx.definition_problems(with_credentials) == []
    # Without credentials too: a literal in the role (ansible-lint's args rule skips a task
    # whose boolean is templated, misspelt options included).
    without = awx.awx_definitions(_plan(), dict(SETTINGS, credentials=[]))
    assert [t["ask_inventory_on_launch"] for t in without["job_templates"]] == [False] * len(awx.STAGES)
    assert awx.definition_problems(without) == []


def test_an_inventory_prompt_next_to_credentials_is_a_problem():
    definitions = _definitions()
    definitions["job_templates"][1]["ask_inventory_on_launch"] = True
    assert awx.definition_problems(definitions) == [
        "job template 'gpushare hosts and Kubernetes': attaches credentials gpu servers and asks for the inventory at "
        "launch; whoever may launch it could point them at any inventory and its variables. Fix: "
        "ask_inventory_on_launch false (the template's own inventory 'gpushare')"]
