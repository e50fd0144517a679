# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan.json written by playbooks/plan.yml through the plan action (which reads the inventory
itself, issue 37 item 1) is, byte for byte, what the plan module wrote when the inventory was
handed to it as arguments: on every example inventory and on a 1,000-server fleet
(benchmarks/plan_fleet.py's, 8,000 GPUs and 20,000 services).

The module's plan.json digests are in tests/fixtures/plan-json-sha256.json ("made" says how
they were made, from the module's code, and how to make them again when the planner's output
changes on purpose). Each case also plans the same inventory in this process, straight from
its files, so a failure says whether the carriage or the planner changed."""

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
FLEET = "plan_fleet.fleet(1000, 20000)"


def inventory_of(name: str, base: Path) -> Path:
    """The hosts.yml of the example ``name``, or of the fleet written under ``base``."""
    if name == FLEET:
        return plan_fleet.write_inventory(plan_fleet.fleet(1000, 20000), base / "inventory") / "hosts.yml"
    return EXAMPLES / name / "hosts.yml"


@pytest.mark.parametrize("name", EXAMPLE_NAMES + [FLEET])
def test_plan_json_is_byte_for_byte_what_the_module_wrote(name, tmp_path):
    inventory = inventory_of(name, tmp_path)
    plan_dir = tmp_path / "plan"
    rc, out = run_playbook_text("plan.yml", inventory, "-e", "gpushare_plan_dir=%s" % plan_dir)
    assert rc == 0, out[-5000:]
    written = (plan_dir / "plan.json").read_bytes()
    # The planner on the inventory's files, as the module got them (JSON arguments), no Ansible.
    plan = plan_and_changes(load_dir(inventory.parent))[0]
    direct = (json.dumps(plan, indent=2) + "\n").encode("utf-8")
    assert written == direct, "plan.yml's plan.json differs from the planner's on the same inventory: the carriage changed it"
    assert hashlib.sha256(written).hexdigest() == RECORDED["sha256"][name], (
        "plan.json differs from the module's recorded one, as does the planner's own: if the planner's output "
        "changed on purpose, make the digests again as tests/fixtures/plan-json-sha256.json says")
