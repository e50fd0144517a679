# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every public filter's example, as ansible-doc shows it (EXAMPLES of plugins/filter/<name>.yml),
runs: all of them as one play on the mixed-fleet example inventory (it has a DRA server, so
the DRA example runs too), after the plan task they start from."""

from __future__ import annotations

import yaml

from gen_filter_docs import FILTER_DIR, expected_files
from inventories import ROOT
from playbooks import run_playbook

INVENTORY = ROOT / "inventory-examples" / "mixed-fleet" / "hosts.yml"


def _examples() -> dict[str, list]:
    return {name: yaml.safe_load(yaml.safe_load((FILTER_DIR / ("%s.yml" % name)).read_text())["EXAMPLES"])
            for name in sorted(expected_files())}


def test_every_public_filter_has_an_example_that_calls_it():
    for name, tasks in _examples().items():
        assert tasks and "gpushare.cluster.%s" % name in yaml.safe_dump(tasks), name


def test_every_public_filters_example_runs(tmp_path):
    tasks = [{"name": "The plan the examples start from", "gpushare.cluster.plan": {}, "register": "gpushare_plan"}]
    for tasks_of_one in _examples().values():
        tasks.extend(tasks_of_one)
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump([{"name": "The public filters' examples", "hosts": "localhost",
                                         "gather_facts": False, "tasks": tasks}], sort_keys=False))
    rc, result, stderr = run_playbook(playbook, INVENTORY)
    ran = [(t["task"]["name"], t["hosts"].get("localhost", {})) for t in result["plays"][0]["tasks"]]
    problems = [(name, host.get("msg")) for name, host in ran
                if host.get("failed") or host.get("skipped") or host.get("unreachable")]
    assert rc == 0 and not problems and len(ran) == len(tasks), (problems, stderr[-2000:])
    # The files the examples write are what the filters give.
    values = yaml.safe_load((tmp_path / "gpu-operator-values.yml").read_text())
    assert values["devicePlugin"]["config"]["create"] is False and "driver" in values
    config = yaml.safe_load((tmp_path / "kueue-controller-manager-config.yaml").read_text())
    assert config["kind"] == "Configuration"
