"""playbooks/plan.yml through ansible-playbook, as a person runs it: files written, a second
run changes nothing, check mode writes nothing, a bad inventory fails naming the path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from inventories import EXAMPLE_NAMES, EXAMPLES, ROOT
from playbooks import run_playbook, run_playbook_text


def run_plan(inventory: Path, plan_dir: Path, *extra: str) -> tuple[int, dict, str]:
    return run_playbook("plan.yml", inventory, "-e", "gpushare_plan_dir=%s" % plan_dir, *extra)


def plan_task(result) -> dict:
    """The plan module's result on localhost."""
    task = next(t for t in result["plays"][0]["tasks"] if t["task"]["name"].endswith("Compute the plan from the inventory"))
    return task["hosts"]["localhost"]


def stop_task(result) -> dict:
    """The task that stops a failed plan, after the one that printed its problems."""
    task = next(t for t in result["plays"][0]["tasks"] if t["task"]["name"].endswith("Stop on the problems above"))
    return task["hosts"]["localhost"]


def printed_problems(result) -> list[str]:
    task = next(t for t in result["plays"][0]["tasks"] if t["task"]["name"].endswith("The problems found "
                                                                                     "(nothing was rendered or applied)"))
    return task["hosts"]["localhost"]["msg"]


def changed(result) -> int:
    return result["stats"]["localhost"]["changed"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_plan_playbook_writes_the_plan_and_is_idempotent(example, tmp_path):
    plan_dir = tmp_path / "plan"
    rc, result, err = run_plan(EXAMPLES / example, plan_dir)
    assert rc == 0, err
    assert changed(result) > 0
    for name in ("plan.json", "report.md", "split.svg", "manifests/40-kueue.yaml", "manifests/10-gpu-operator.yaml"):
        assert (plan_dir / name).is_file(), name
    plan = json.loads((plan_dir / "plan.json").read_text())
    assert plan["format"] == "gpushare.cluster/plan-v1"
    assert list(yaml.safe_load_all((plan_dir / "manifests" / "40-kueue.yaml").read_text()))
    rc, again, err = run_plan(EXAMPLES / example, plan_dir)
    assert rc == 0, err
    assert changed(again) == 0


def test_only_a_file_that_differs_is_written(tmp_path):
    plan_dir = tmp_path / "plan"
    assert run_plan(EXAMPLES / "four-gpu-server", plan_dir)[0] == 0
    (plan_dir / "report.md").write_text("edited by hand\n")
    before = (plan_dir / "plan.json").stat().st_mtime_ns
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", plan_dir)
    assert rc == 0, err
    assert plan_task(result)["written"] == [str(plan_dir / "report.md")]
    assert changed(result) == 1
    assert (plan_dir / "plan.json").stat().st_mtime_ns == before
    assert (plan_dir / "report.md").read_text().startswith("#")


def test_an_unwritable_plan_directory_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", blocker / "plan")
    assert rc != 0
    msg = plan_task(result)["msg"]
    assert msg.startswith("Cannot write the plan file %s/plan/plan.json" % blocker) and "gpushare_artifacts_dir" in msg


def test_check_mode_writes_nothing(tmp_path):
    plan_dir = tmp_path / "plan"
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", plan_dir, "--check")
    assert rc == 0, err
    assert not plan_dir.exists()


def test_the_summary_is_printed():
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", ROOT / "build" / "test-plan-summary", "--check")
    task = next(t for t in result["plays"][0]["tasks"] if t["task"]["name"] == "Show the split and the team quotas")
    lines = task["hosts"]["localhost"]["msg"]
    assert any("time-sliced x5" in line for line in lines)
    assert any(line.startswith("production") and "reclaims at once" in line for line in lines)


def summary_lines(result) -> list[str]:
    task = next(t for t in result["plays"][0]["tasks"] if t["task"]["name"] == "Show the split and the team quotas")
    return task["hosts"]["localhost"]["msg"]


@pytest.mark.parametrize("at, expected", [
    ("20:00", "Sharing window in force at 20:00 UTC: night (19:00-07:00)"),
    ("12:00", "Sharing window in force at 12:00 UTC: none (the base state)")])
def test_the_summary_names_the_window_in_force(at, expected):
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", ROOT / "build" / "test-plan-summary", "--check",
                               "-e", "gpushare_window_at=" + at)
    assert rc == 0, err
    assert expected in summary_lines(result)


@pytest.mark.parametrize("extra, message", [
    (("-e", "gpushare_window=weekend"), "window 'weekend' is not a window of the plan; windows: night (or auto, none)"),
    (("-e", "gpushare_window_at=7pm"), "at must be a time of day HH:MM, not '7pm'")])
def test_a_bad_window_choice_fails_with_the_fix(tmp_path, extra, message):
    rc, result, err = run_plan(EXAMPLES / "four-gpu-server", tmp_path / "plan", *extra)
    assert rc != 0
    assert plan_task(result)["msg"] == message
    assert not (tmp_path / "plan").exists()


def test_a_bad_inventory_fails_naming_the_path_and_writes_nothing(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    teams = inventory / "group_vars" / "all" / "teams.yml"
    teams.write_text(teams.read_text().replace("borrow: false", 'borrow: "no"', 1))
    host = inventory / "host_vars" / "gpu01.yml"
    host.write_text(host.read_text().replace("gpu_model: h200", "gpu_model: h2OO"))
    plan_dir = tmp_path / "plan"
    rc, result, err = run_plan(inventory, plan_dir)
    assert rc != 0
    task = plan_task(result)
    assert stop_task(result)["failed"]
    paths = {p["path"] for p in task["problems"]}
    assert paths == {"gpushare_teams[0].borrow", "hostvars[gpu01].gpushare_node.gpu_model"}
    assert "nothing was rendered or applied" in task["msg"] and "Traceback" not in task["msg"]
    assert not plan_dir.exists()


def test_a_gpu_host_without_host_vars_gets_the_planners_message(tmp_path):
    """A host in gpushare_gpu_nodes with no gpushare_node: the planner names it (on
    ansible-core 2.19 ``map(attribute=..., default=none)`` on host variables raised a
    template error instead)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    hosts["all"]["children"]["gpushare_gpu_nodes"]["hosts"]["gpu02"] = None
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    rc, result, err = run_plan(inventory, tmp_path / "plan")
    assert rc != 0
    task = plan_task(result)
    problem = next(p for p in task["problems"] if p["path"] == "hostvars[gpu02].gpushare_node")
    assert "host_vars/gpu02.yml" in problem["hint"]
    assert "HostVarsVars" not in task["msg"]


def test_a_misspelt_variable_is_named_alone(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    teams = inventory / "group_vars" / "all" / "teams.yml"
    teams.write_text(teams.read_text().replace("gpushare_teams:", "gpushare_team:"))
    rc, result, err = run_plan(inventory, tmp_path / "plan")
    assert rc != 0
    assert [p["path"] for p in plan_task(result)["problems"]] == ["gpushare_team"]
    assert "Did you mean 'gpushare_teams'?" in printed_problems(result)[1]


@pytest.mark.parametrize("file, edit, path", [
    # a dict where the list of teams belongs: Ansible's argument spec refused it without a path
    ("teams.yml", lambda text: "gpushare_teams: {name: production}\n", "gpushare_teams"),
    ("teams.yml", lambda text: text.replace("members: [ml-engineers]", "members: {ml: engineers}"),
     "gpushare_teams[2].members"),
    ("policy.yml", lambda text: "gpushare_policy: [kubeadm]\n", "gpushare_policy"),
])
def test_a_wrong_shape_names_the_inventory_path(tmp_path, file, edit, path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    target = inventory / "group_vars" / "all" / file
    target.write_text(edit(target.read_text()))
    rc, result, err = run_plan(inventory, tmp_path / "plan")
    assert rc != 0
    problems = plan_task(result).get("problems") or []
    assert path in [p["path"] for p in problems], plan_task(result)


def test_a_directory_given_with_i_after_a_first_run_names_the_right_path_once(tmp_path):
    """-i <directory> after a run with -i <directory>/hosts.yml: Ansible reads the plan files of
    that run as inventory; the refusal names <directory>/artifacts (it said
    .../artifacts/artifacts) and, with the default output, each line is printed once (the
    [ERROR] lines and the result repeated every failure)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    assert run_playbook("plan.yml", inventory / "hosts.yml")[0] == 0
    rc, out = run_playbook_text("plan.yml", inventory)
    assert rc != 0
    line = "The plan files would go to %s/artifacts, inside the inventory directory %s given with -i" % (
        inventory, inventory)
    assert out.count(line) == 1, out
    assert "artifacts/artifacts" not in out
    assert "the files of an earlier run in %s/artifacts" % inventory in out


def test_the_problems_of_a_bad_inventory_are_printed_once(tmp_path):
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    host = inventory / "host_vars" / "gpu01.yml"
    host.write_text(host.read_text().replace("gpu_model: h200", "gpu_model: h2OO"))
    rc, out = run_playbook_text("plan.yml", inventory / "hosts.yml", "-e", "gpushare_plan_dir=%s" % (tmp_path / "plan"))
    assert rc != 0
    assert out.count("hostvars[gpu01].gpushare_node.gpu_model: unknown GPU model (got 'h2OO')") == 1, out


def test_inventory_values_written_with_jinja_are_templated(tmp_path):
    """The plan action reads the inventory itself and templates only values holding Jinja: a
    host's gpushare_node, gpushare_policy and gpushare_workloads written with templates plan
    exactly as the same values written out."""
    plain_dir, jinja_dir = tmp_path / "plain", tmp_path / "jinja"
    assert run_plan(EXAMPLES / "four-gpu-server" / "hosts.yml", plain_dir)[0] == 0
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    for path, old, new in [
            ("host_vars/gpu01.yml", "gpu_model: h200 ", "gpu_model: \"{{ 'h2' ~ '00' }}\" "),
            ("group_vars/all/policy.yml", "cluster_name: example-day", "cluster_name: \"{{ 'example' ~ '-day' }}\""),
            ("group_vars/all/workloads.yml", "- name: vllm-chat ", "- name: \"{{ 'vllm' ~ '-chat' }}\" ")]:
        target = inventory / path
        assert old in target.read_text(), (path, old)
        target.write_text(target.read_text().replace(old, new, 1))
    rc, result, err = run_plan(inventory / "hosts.yml", jinja_dir)
    assert rc == 0, plan_task(result).get("msg")
    assert (jinja_dir / "plan.json").read_text() == (plain_dir / "plan.json").read_text()


def test_changes_are_listed_against_the_applied_plan_until_one_is_applied(tmp_path):
    """docs/day-two.md: with applied-plan.json in the plan directory, plan.yml lists its changes
    against it, not against the plan.json of the last plan.yml, so a second plan.yml without
    applying lists the same changes."""
    plan_dir = tmp_path / "plan"
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    assert run_plan(inventory / "hosts.yml", plan_dir)[0] == 0
    shutil.copy(plan_dir / "plan.json", plan_dir / "applied-plan.json")  # as site.yml records it
    workloads = inventory / "group_vars" / "all" / "workloads.yml"
    body = yaml.safe_load(workloads.read_text())
    gone = body["gpushare_workloads"].pop()
    workloads.write_text(yaml.safe_dump(body))
    for _run in range(2):
        rc, result, err = run_plan(inventory / "hosts.yml", plan_dir)
        assert rc == 0, err
        changes = plan_task(result)["changes"]
        assert changes["against"]["file"] == str(plan_dir / "applied-plan.json")
        assert any(gone["name"] in json.dumps(item) for item in changes["ended"]), changes["ended"]


def test_a_rerun_with_pending_changes_and_no_applied_plan_yet_changes_nothing(tmp_path):
    """The second plan.yml after an edit keeps the first plan as applied-plan.json and lists the
    changes against it; a third run of the same inventory then reads them from there and must
    write the same changes.md and changes.json (the twin's site.yml rerun reported changed=1 when
    the files named plan.json the first time and applied-plan.json the next)."""
    plan_dir = tmp_path / "plan"
    inventory = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "four-gpu-server", inventory)
    assert run_plan(inventory / "hosts.yml", plan_dir)[0] == 0
    workloads = inventory / "group_vars" / "all" / "workloads.yml"
    body = yaml.safe_load(workloads.read_text())
    body["gpushare_workloads"].pop()
    workloads.write_text(yaml.safe_dump(body))
    written = []
    for _run in range(2):
        rc, result, err = run_plan(inventory / "hosts.yml", plan_dir)
        assert rc == 0, err
        written.append((plan_task(result)["changed"], (plan_dir / "changes.md").read_text(),
                        (plan_dir / "changes.json").read_text()))
    (first_changed, first_md, first_json), (again_changed, again_md, again_json) = written
    assert first_changed and (plan_dir / "applied-plan.json").exists()
    assert "applied-plan.json" in first_md and json.loads(first_json)["pending"]
    assert (again_changed, again_md, again_json) == (False, first_md, first_json)
