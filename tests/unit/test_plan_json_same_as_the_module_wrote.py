# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan.json written by playbooks/plan.yml through the plan action (which reads the inventory
itself, issue 37 item 1) is, byte for byte, what the plan module wrote when the inventory was
handed to it as arguments: on every example inventory and on a 1,000-server fleet
(benchmarks/plan_fleet.py's, 8,000 GPUs and 20,000 services).

The module's plan.json digests are in tests/fixtures/plan-json-sha256.json ("made" says how
they were made, from the module's code, and how to make them again when the planner's output
changes on purpose). Each case also plans the same inventory in this process, straight from
its files, so a failure says whether the carriage or the planner changed.

Every other file of the plan directory (report.md, split.svg, changes.md, changes.json,
manifests/, teams/) is, byte for byte, what plan.yml wrote before issue 37 made the team files
and the planner's per-workload checks linear (tests/fixtures/plan-dir-sha256.json says how its
digests were made); one run of plan.yml per inventory serves both tests. The same run checks
that plan.yml's "Written to" line names every file and folder it wrote."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from inventories import EXAMPLE_NAMES, EXAMPLES, ROOT, load_dir
from playbooks import run_playbook_text

sys.path.insert(0, str(ROOT / "benchmarks"))
import plan_fleet  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import plan_and_changes  # noqa: E402

RECORDED = json.loads((ROOT / "tests" / "fixtures" / "plan-json-sha256.json").read_text())
BEFORE_ISSUE_37 = json.loads((ROOT / "tests" / "fixtures" / "plan-dir-sha256.json").read_text())
FLEET = "plan_fleet.fleet(1000, 20000)"


def inventory_of(name: str, base: Path) -> Path:
    """The hosts.yml of the example ``name``, or of the fleet written under ``base``."""
    if name == FLEET:
        return plan_fleet.write_inventory(plan_fleet.fleet(1000, 20000), base / "inventory") / "hosts.yml"
    return EXAMPLES / name / "hosts.yml"


@pytest.fixture(scope="module", name="planned", params=EXAMPLE_NAMES + [FLEET])
def fixture_planned(request, tmp_path_factory):
    """(name, inventory, plan directory, plan.yml's output) after one plan.yml on a fresh directory."""
    base = tmp_path_factory.mktemp("plan")
    inventory = inventory_of(request.param, base)
    plan_dir = base / "plan"
    rc, out = run_playbook_text("plan.yml", inventory, "-e", "gpushare_plan_dir=%s" % plan_dir)
    assert rc == 0, out[-5000:]
    return request.param, inventory, plan_dir, out


def test_plan_json_is_byte_for_byte_what_the_module_wrote(planned):
    name, inventory, plan_dir, _out = planned
    written = (plan_dir / "plan.json").read_bytes()
    # The planner on the inventory's files, as the module got them (JSON arguments), no Ansible.
    plan = plan_and_changes(load_dir(inventory.parent))[0]
    direct = (json.dumps(plan, indent=2) + "\n").encode("utf-8")
    assert written == direct, "plan.yml's plan.json differs from the planner's on the same inventory: the carriage changed it"
    assert hashlib.sha256(written).hexdigest() == RECORDED["sha256"][name], (
        "plan.json differs from the module's recorded one, as does the planner's own: if the planner's output "
        "changed on purpose, make the digests again as tests/fixtures/plan-json-sha256.json says")


def entry_digests(plan_dir: Path) -> dict:
    """Top-level entry -> sha256: a file's own; a folder's (name ending in /) of the lines
    `sha256sum` prints for its files, paths relative to it in byte order."""
    out = {}
    for entry in sorted(plan_dir.iterdir()):
        if entry.is_file():
            out[entry.name] = hashlib.sha256(entry.read_bytes()).hexdigest()
            continue
        files = sorted((f.relative_to(entry).as_posix(), f) for f in entry.rglob("*") if f.is_file())
        lines = "".join("%s  %s\n" % (hashlib.sha256(f.read_bytes()).hexdigest(), rel) for rel, f in files)
        out[entry.name + "/"] = hashlib.sha256(lines.encode("utf-8")).hexdigest()
    return out


def test_every_file_of_the_plan_directory_is_what_it_was_before_issue_37(planned):
    name, _inventory, plan_dir, _out = planned
    digests, recorded = entry_digests(plan_dir), BEFORE_ISSUE_37["sha256"][name]
    differ = sorted(e for e in set(digests) | set(recorded) if digests.get(e) != recorded.get(e))
    assert not differ, ("%s differ from what plan.yml wrote before issue 37: if a renderer's output changed on "
                        "purpose, make the digests again as tests/fixtures/plan-dir-sha256.json says" % differ)


def test_the_written_to_line_names_what_was_written(planned):
    _name, _inventory, plan_dir, out = planned
    line = next(line for line in out.splitlines() if "Written to %s: " % plan_dir in line)
    named = line.split("Written to %s: " % plan_dir, 1)[1].rstrip('",').split(", ")
    assert sorted(named) == sorted(e.name + ("/" if e.is_dir() else "") for e in plan_dir.iterdir())
