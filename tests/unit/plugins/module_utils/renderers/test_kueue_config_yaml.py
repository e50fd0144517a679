# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""deep_merge copies, and the YAML text is the configuration in Kueue's own key order."""

from __future__ import annotations

import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config
from inventories import load_example


def test_merging_copies_so_neither_input_changes_later():
    base = {"a": {"b": [1]}, "c": 1}
    override = {"a": {"d": {"e": 2}}, "f": [[3]]}
    merged = kueue_config.deep_merge(base, override)
    assert merged == {"a": {"b": [1], "d": {"e": 2}}, "c": 1, "f": [[3]]}
    merged["a"]["b"].append(9)
    merged["f"][0].append(9)
    assert base == {"a": {"b": [1]}, "c": 1}
    assert override == {"a": {"d": {"e": 2}}, "f": [[3]]}


def test_the_yaml_is_the_configuration_in_kueues_key_order():
    plan = build_plan(load_example("four-gpu-server"))
    text = kueue_config.kueue_manager_config_yaml(plan)
    config = yaml.safe_load(text)
    # Kueue's shipped controller_manager_config.yaml begins apiVersion, kind; keys are not re-sorted.
    assert text.startswith("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")
    assert config["metrics"]["enableClusterQueueResources"] is True
    assert config["integrations"]["frameworks"] == plan["kueue"]["configuration"]["integrations"]["frameworks"]
    without = yaml.safe_load(kueue_config.kueue_manager_config_yaml(plan, cluster_queue_metrics=False))
    assert "enableClusterQueueResources" not in without["metrics"]
