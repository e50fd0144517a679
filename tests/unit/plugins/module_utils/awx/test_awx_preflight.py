"""What roles/awx decides from AWX's answers (module_utils/awx/awx_preflight.py, filters
awx_named_object_problems and awx_project_step): named objects checked before the first
write (issue 33 item 6), one project sync and a usable project before anything uses it
(item 8), and the manual project's removed inventory source (item 7)."""

from __future__ import annotations

import importlib

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.awx import awx_preflight as pre
from ansible_collections.gpushare.cluster.plugins.module_utils.awx import awx_schedules

FILTERS = importlib.import_module("ansible_collections.gpushare.cluster.plugins.filter.__awx").FilterModule().filters()
NAMED = {"organization": "Default", "machine_credential": "gpu servers", "kubeconfig_credential": "kube admin",
         "kubeconfig_type": "gpushare kubeconfig"}
# As /api/v2/organizations/ and /api/v2/credentials/ list them in AWX 24.6.1 (fields used here).
ORGS = [{"id": 1, "name": "Default"}]
CREDS = [{"id": 1, "name": "Demo Credential", "summary_fields": {}},
         {"id": 3, "name": "gpu servers", "summary_fields": {"organization": {"id": 1, "name": "Default"}}},
         {"id": 4, "name": "kube admin", "summary_fields": {"organization": {"id": 1, "name": "Default"}}}]


def test_every_named_object_present_once_is_no_problem():
    assert pre.named_object_problems({"organizations": ORGS, "credentials": CREDS}, NAMED) == []
    # no credential named: the credentials are not needed
    assert pre.named_object_problems({"organizations": ORGS, "credentials": []},
                                     dict(NAMED, machine_credential="", kubeconfig_credential="")) == []


def test_a_missing_credential_names_the_option_the_value_and_the_choices():
    """The issue's run: -e '{"gpushare_awx_kubeconfig_credential": "no such kubeconfig"}'."""
    problems = pre.named_object_problems({"organizations": ORGS, "credentials": CREDS},
                                         dict(NAMED, kubeconfig_credential="no such kubeconfig"))
    assert problems == [
        "gpushare_awx_kubeconfig_credential: no credential named 'no such kubeconfig' in AWX; create it (of the "
        "credential type 'gpushare kubeconfig', which this role creates: run it once without "
        "gpushare_awx_kubeconfig_credential, then add the credential) or set the option to one of: "
        "'Demo Credential', 'gpu servers', 'kube admin'"]


def test_all_missing_objects_are_reported_at_once():
    problems = pre.named_object_problems({"organizations": ORGS, "credentials": []},
                                         dict(NAMED, organization="Platform"))
    assert [p.split(":")[0] for p in problems] == ["gpushare_awx_organization", "gpushare_awx_machine_credential",
                                                   "gpushare_awx_kubeconfig_credential"]
    assert problems[0] == ("gpushare_awx_organization: no organization named 'Platform' in AWX; create it or set "
                           "the option to one of: 'Default'")
    assert problems[1].endswith("AWX has no credentials yet")


def test_a_name_awx_has_twice_is_refused():
    """awx.awx resolves a credential by name and fails on two ("returned 2 items, expected 1");
    AWX allows the same name in two organizations."""
    twice = CREDS + [{"id": 9, "name": "gpu servers", "summary_fields": {"organization": {"id": 2, "name": "Lab"}}}]
    problems = pre.named_object_problems({"organizations": ORGS, "credentials": twice}, NAMED)
    assert problems == ["gpushare_awx_machine_credential: 2 credentials are named 'gpu servers' in AWX (ids 3 "
                        "(organization Default), 9 (organization Lab)) and awx.awx looks credentials up by name, "
                        "needing exactly one; rename all but one"]


def _git(status, current=None, last=None):
    summary = {}
    if current:
        summary["current_update"] = {"id": current, "status": status}
    if last:
        summary["last_update"] = {"id": last, "status": status if not current else "successful"}
    return {"id": 8, "name": "gpushare", "scm_type": "git", "status": status, "summary_fields": summary}


@pytest.mark.parametrize("project, changed, sync, action, update_id", [
    # created or URL/branch changed: AWX started a sync (pending/running): wait for it, start none
    (_git("pending", current=11), True, False, "wait", 11),
    (_git("running", current=11), True, True, "wait", 11),
    # an earlier run's sync still running (the rerun after the 5-minute limit): wait for it
    (_git("running", current=11, last=10), False, False, "wait", 11),
    # AWX's sync already finished successfully: nothing more
    (_git("successful", last=11), True, False, "none", 11),
    (_git("successful", last=11), True, True, "none", 11),
    # unchanged and synced: a sync only when asked
    (_git("successful", last=10), False, False, "none", 10),
    (_git("successful", last=10), False, True, "sync", None),
    # never synced successfully, nothing running: one sync
    (_git("failed", last=10), False, False, "sync", None),
    (_git("never updated"), False, False, "sync", None),
    (_git("canceled", last=10), False, True, "sync", None),
    # the sync AWX started for this run's change failed: say so, start none
    (_git("failed", last=11), True, False, "fail", 11),
])
def test_project_step(project, changed, sync, action, update_id):
    step = pre.project_step(project, changed, sync)
    assert (step["action"], step["update_id"]) == (action, update_id), step


def test_a_manual_project_is_usable_unless_its_folder_is_missing():
    manual = {"id": 8, "name": "gpushare", "scm_type": "", "status": "ok", "local_path": "gpushare", "summary_fields": {}}
    assert pre.project_step(manual, True, True)["action"] == "none"
    step = pre.project_step(dict(manual, status="missing"))
    assert step["action"] == "fail" and "'gpushare' is missing under AWX's projects root" in step["message"]


def test_the_filters_are_the_functions():
    assert FILTERS["awx_named_object_problems"]({"organizations": [], "credentials": []},
                                                dict(NAMED, machine_credential="", kubeconfig_credential="")) == [
        "gpushare_awx_organization: no organization named 'Default' in AWX; create it or AWX has no organizations yet"]
    assert FILTERS["awx_project_step"](_git("running", current=5), True)["action"] == "wait"


def test_a_manual_project_removes_the_git_projects_inventory_source():
    """Switching git -> manual: AWX keeps the SCM source on the now manual project; the
    definitions name it for removal, by the name the git project's source has."""
    settings = {"organization": "Default", "project": "gpushare", "inventory": "gpushare"}
    git = awx_schedules.project_and_inventory_source(dict(settings, project_scm_url="https://git.example.com/g.git"))
    manual = awx_schedules.project_and_inventory_source(settings)
    assert git["inventory_source_absent"] is None
    assert manual["inventory_source_absent"] == {"name": "gpushare from project", "inventory": "gpushare"}
    assert manual["inventory_source_absent"]["name"] == git["inventory_source"]["name"]
