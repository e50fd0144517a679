"""The order of roles/awx's AWX calls, read from roles/awx/tasks/main.yml (issue 33 items
6-8): the named objects the role does not create are looked up before the first write; the
project task neither syncs nor waits (awx.awx 24.6.1 polls with no time limit then); the only
sync started is project_update, run only when awx_project_step says so; the sync AWX started
is waited for with a time limit; the project is read again and must be usable before the
inventory, its source, the credential type, the templates and the schedules are written; a
manual project's left-over SCM inventory source is removed."""

from __future__ import annotations

import yaml

from inventories import ROOT


def _module(task: dict) -> str:
    return next(k for k in task if "." in k and k.split(".")[0] in ("ansible", "awx", "gpushare"))


def awx_block() -> list[dict]:
    tasks = yaml.safe_load((ROOT / "roles" / "awx" / "tasks" / "main.yml").read_text().replace("!unsafe ", ""))
    return next(t for t in tasks if t.get("block") and "awx.awx.project" in str(t["block"]))["block"]


def _index(block, predicate) -> list[int]:
    return [i for i, t in enumerate(block) if predicate(t)]


def test_named_objects_are_looked_up_before_the_first_write():
    block = awx_block()
    writes = _index(block, lambda t: _module(t).startswith("awx.awx."))
    check = _index(block, lambda t: "awx_named_object_problems" in str(t))
    assert len(check) == 1 and check[0] < writes[0], (check, writes)
    text = str(block[check[0]])
    for kind in ("'organizations'", "'credentials'"):
        assert "query('awx.awx.controller_api', %s" % kind in text
    assert _module(block[check[0]]) == "ansible.builtin.assert"
    # every option naming an object the role does not create is in what is checked
    role_vars = yaml.safe_load((ROOT / "roles" / "awx" / "vars" / "main.yml").read_text())
    assert role_vars["_awx_named"] == {"organization": "{{ awx_organization }}",
                                       "machine_credential": "{{ awx_machine_credential }}",
                                       "kubeconfig_credential": "{{ awx_kubeconfig_credential }}",
                                       "kubeconfig_type": "{{ _awx_names.kubeconfig_type }}"}
    assert "_awx_named" in text


def test_one_sync_and_a_usable_project_before_anything_that_names_it():
    block = awx_block()
    modules = [_module(t) for t in block]
    projects = _index(block, lambda t: _module(t) == "awx.awx.project")
    assert len(projects) == 2
    for i in projects:
        args = block[i]["awx.awx.project"]
        assert args["wait"] is False and args.get("update_project", False) is False
    # the only task that starts a sync, run only when the decision says so, with a limit
    assert modules.count("awx.awx.project_update") == 1
    sync = block[modules.index("awx.awx.project_update")]
    assert sync["when"] == "__awx_project_step.action == 'sync'"
    assert sync["awx.awx.project_update"]["wait"] is True and 0 < sync["awx.awx.project_update"]["timeout"] <= 600
    # the wait polls the running update through the API, about 5 minutes at most
    waits = _index(block, lambda t: t.get("when") == "__awx_project_step.action == 'wait'")
    assert len(waits) == 1
    wait = block[waits[0]]
    assert "'project_updates/' ~ __awx_project_step.update_id" in wait["until"]   # re-evaluated each try
    assert 0 < wait["retries"] * wait["delay"] <= 600
    decide = _index(block, lambda t: "__awx_project_step" in t.get("ansible.builtin.set_fact", {}))
    usable = _index(block, lambda t: _module(t) == "ansible.builtin.assert" and "awx_project_step" in str(t))
    assert len(decide) == 1 and len(usable) == 1
    assert "__awx_git_project is changed" in block[decide[0]]["ansible.builtin.set_fact"]["__awx_project_step"]
    assert max(projects) < decide[0] < waits[0] < usable[0]
    assert decide[0] < modules.index("awx.awx.project_update") < usable[0]
    # everything that names the project or is only useful with it comes after it is usable
    later = ("awx.awx.inventory", "awx.awx.inventory_source", "awx.awx.credential_type", "awx.awx.job_template",
             "awx.awx.schedule")
    assert all(i > usable[0] for i, m in enumerate(modules) if m in later)
    assert min(projects) > modules.index("awx.awx.execution_environment")


def test_a_manual_project_gets_its_left_over_source_removed():
    block = awx_block()
    sources = [t for t in block if _module(t) == "awx.awx.inventory_source"]
    assert len(sources) == 2
    present = next(t for t in sources if t["awx.awx.inventory_source"].get("state", "present") == "present")
    absent = next(t for t in sources if t["awx.awx.inventory_source"].get("state") == "absent")
    assert present["when"] == "awx_definitions.inventory_source is not none"
    assert absent["when"] == "awx_definitions.inventory_source_absent is not none"
    assert absent["awx.awx.inventory_source"]["name"] == "{{ awx_definitions.inventory_source_absent.name }}"
    assert absent["awx.awx.inventory_source"]["inventory"] == "{{ awx_definitions.inventory_source_absent.inventory }}"
