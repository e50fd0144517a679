"""playbooks/awx.yml (roles/awx) run against a stand-in for AWX 24.6.1's API
(tests/awx/fake_awx.py: the endpoints awx.awx calls, AWX's response shapes, its sync on
project create or URL/branch change, its refusal of a template whose playbook no sync has
brought, of an SCM source on a manual project). Issue 33 items 6-8, as a user runs them:

6. a credential or organization name AWX does not have fails before any write, naming the option;
7. a project switched from git to manual loses its SCM inventory source;
8. a new git project or a branch change gets one sync (AWX's), and nothing else is
   created before it succeeded; a rerun while that sync still runs waits for it.

Run by tests/suites/60-awx.sh (each scenario runs ansible-playbook, about 15-50 s each):

    .venv/bin/python -m pytest tests/awx/test_role_against_fake_api.py -q -p no:cacheprovider
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for extra in (HERE.parents[1] / ".collections", HERE.parent / "unit", HERE):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import fake_awx  # noqa: E402
from inventories import ROOT  # noqa: E402
from playbooks import run_playbook_text  # noqa: E402

INVENTORY = ROOT / "inventory-examples" / "four-gpu-server" / "hosts.yml"
GIT = "https://git.example.com/platform/gpushare.git"
LATER = ("/api/v2/inventories/", "/api/v2/inventory_sources/", "/api/v2/credential_types/", "/api/v2/job_templates/",
         "/api/v2/schedules/")


@pytest.fixture(name="awx")
def fixture_awx(monkeypatch):
    awx = fake_awx.FakeAWX(sync_seconds=3)
    server, url = fake_awx.serve(awx)
    monkeypatch.setenv("CONTROLLER_HOST", url)
    monkeypatch.setenv("CONTROLLER_OAUTH_TOKEN", "fake")
    monkeypatch.setenv("CONTROLLER_VERIFY_SSL", "false")
    yield awx
    server.shutdown()


def run_awx(*extra: str):
    """ansible-playbook playbooks/awx.yml on the example inventory: (rc, output)."""
    return run_playbook_text("awx.yml", INVENTORY, *extra)


def creates(awx, since: int = 0) -> list[str]:
    return ["%s %s" % (r["method"], r["path"]) for r in awx.writes()[since:]]


def syncs(awx) -> list[dict]:
    return list(awx.objects["project_updates"].values())


def test_unknown_names_fail_before_any_write_naming_the_options(awx):
    """The issue's run, with an organization AWX lacks too: both said at once, nothing written."""
    awx.add("credentials", {"name": "gpu servers", "organization": 1, "credential_type": 1})
    rc, out = run_awx("-e", '{"gpushare_awx_kubeconfig_credential": "no such kubeconfig", '
                            '"gpushare_awx_machine_credential": "gpu servers", "gpushare_awx_organization": "Platform"}',
                      "-e", "gpushare_awx_project_scm_url=" + GIT)
    assert rc == 2, out
    assert ("gpushare_awx_kubeconfig_credential: no credential named 'no such kubeconfig' in AWX; create it" in out
            and "or set the option to one of: 'Demo Credential', 'gpu servers'" in out), out
    assert "gpushare_awx_organization: no organization named 'Platform' in AWX" in out, out
    assert creates(awx) == [] and syncs(awx) == []


def test_one_sync_per_new_or_changed_project_nothing_before_it_and_manual_drops_the_source(awx):
    rc, out = run_awx("-e", "gpushare_awx_project_scm_url=" + GIT)
    assert rc == 0, out
    assert len(syncs(awx)) == 1, creates(awx)                   # AWX's own, on create
    assert not any(r["path"].endswith("/update/") for r in awx.writes())
    synced_at = syncs(awx)[0]["_done_at"]
    later = [r for r in awx.writes() if r["path"].startswith(LATER)]
    assert later and all(r["time"] >= synced_at for r in later), (synced_at, creates(awx))
    assert awx.named("job_templates", "gpushare plan") and awx.named("inventory_sources", "gpushare from project")
    # a rerun with nothing changed starts no sync and writes nothing
    before = len(awx.writes())
    rc, out = run_awx("-e", "gpushare_awx_project_scm_url=" + GIT)
    assert rc == 0, out
    assert len(syncs(awx)) == 1 and creates(awx, before) == []
    # a branch change: AWX syncs once, the role starts no second
    rc, out = run_awx("-e", "gpushare_awx_project_scm_url=" + GIT, "-e", "gpushare_awx_project_scm_branch=release")
    assert rc == 0, out
    assert len(syncs(awx)) == 2 and not any(r["path"].endswith("/update/") for r in awx.writes())
    # git -> manual: the SCM inventory source AWX keeps on the manual project is removed
    source = awx.named("inventory_sources", "gpushare from project")
    assert source is not None
    rc, out = run_awx()
    assert rc == 0, out
    assert awx.named("projects", "gpushare")["scm_type"] == ""
    assert awx.named("inventory_sources", "gpushare from project") is None
    assert "DELETE /api/v2/inventory_sources/%d/" % source["id"] in creates(awx)


def test_a_rerun_while_the_sync_runs_waits_for_it_and_starts_none(awx):
    """What a run that passed the 5-minute limit leaves: the project, its sync still running,
    nothing else. The plain rerun waits for that sync (it ends only once it is polled, so a
    run that does not wait for it meets "Playbook not found for project") and only then
    creates the rest, starting no sync of its own."""
    ee = awx.add("execution_environments", {"name": "gpushare execution environment", "image": "gpushare-ee:latest",
                                            "pull": "missing", "organization": 1})
    awx.sync_polls = 2
    awx.add("projects", {"name": "gpushare", "organization": 1, "scm_type": "git", "scm_url": GIT, "scm_branch": "main",
                         "scm_update_on_launch": False, "default_environment": ee["id"]})
    rc, out = run_awx("-e", "gpushare_awx_project_scm_url=" + GIT)
    assert rc == 0, out
    assert len(syncs(awx)) == 1
    done = syncs(awx)[0]["_done_at"]
    later = [r for r in awx.writes() if r["path"].startswith(LATER)]
    assert later and all(r["time"] >= done for r in later), creates(awx)


def test_a_failed_sync_of_a_new_project_stops_before_the_rest(awx):
    awx.sync_result = "failed"
    rc, out = run_awx("-e", "gpushare_awx_project_scm_url=" + GIT)
    assert rc == 2, out
    assert "The project is not usable, so nothing else was created" in out, out
    assert len(syncs(awx)) == 1
    assert not [r for r in awx.writes() if r["path"].startswith(LATER)], creates(awx)


def test_the_fake_refuses_what_awx_refuses(awx):
    """The stand-in's own rules, so the tests above can fail: a template before any sync, an
    SCM source on a manual project."""
    manual = awx.add("projects", {"name": "m", "organization": 1, "scm_type": "", "local_path": "elsewhere"})
    git = awx.add("projects", {"name": "g", "organization": 1, "scm_type": "git", "scm_url": GIT})
    assert awx.handle("POST", "/api/v2/job_templates/", {}, {"name": "t", "project": git["id"], "playbook": "playbooks/plan.yml"}) == (
        400, {"playbook": ["Playbook not found for project."]})
    assert awx.handle("POST", "/api/v2/inventory_sources/", {}, {"name": "s", "source": "scm", "source_project": manual["id"]})[0] == 400
    assert awx.view("projects", manual)["status"] == "missing"
    assert awx.view("projects", git)["status"] in ("pending", "running")
