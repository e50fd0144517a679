# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's rule groups for an example inventory, as a Prometheus rule file.

    python tests/prometheus/rules.py --inventory inventory-examples/NAME --out rules.yml

The same groups render_monitoring.prometheus_rule puts in the PrometheusRule the role
applies (spec.groups), with the role's defaults.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT / ".collections", ROOT / "tests" / "unit"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# pylint: disable=wrong-import-position
import inventories  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan as plan_module  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_monitoring  # noqa: E402


def rule_file(inventory: str, namespace_label: str = "auto") -> dict:
    plan = plan_module.build_plan(inventories.load_example(Path(inventory).name))
    return {"groups": render_monitoring.prometheus_rule(plan, namespace_label=namespace_label)["spec"]["groups"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--inventory", required=True, help="inventory-examples/NAME")
    ap.add_argument("--namespace-label", default="auto", choices=render_monitoring.NAMESPACE_LABEL_CHOICES)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if not (ROOT / "inventory-examples" / Path(args.inventory).name).is_dir():
        ap.error("--inventory %s: no such example inventory; choose one of %s"
                 % (args.inventory, ", ".join(inventories.EXAMPLE_NAMES)))
    Path(args.out).write_text(yaml.safe_dump(rule_file(args.inventory, args.namespace_label), sort_keys=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
