# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kueue manager Configuration (renderers/kueue_config.py): Kueue v0.19.2's shipped
configuration with the Plan's merged over it, for every example inventory."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLE_NAMES, load_example

PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}


@pytest.fixture(params=EXAMPLE_NAMES)
def plan(request):
    return copy.deepcopy(PLANS[request.param])


def test_kueue_config_carries_the_plan(plan):
    config = kueue_config.kueue_manager_config(plan)
    planned = plan["kueue"]["configuration"]
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert config["integrations"]["frameworks"] == planned["integrations"]["frameworks"]
    # PyTorchJob is off by default since v0.19 and must be listed explicitly (kubernetes-sigs/kueue
    # commit 6cdcd3828d, config/components/manager/controller_manager_config.yaml)
    assert "kubeflow.org/pytorchjob" in config["integrations"]["frameworks"]
    for key, value in planned.get("resources", {}).items():
        assert config["resources"][key] == value
    assert config["metrics"] == {"bindAddress": ":8443", "enableClusterQueueResources": True}
    assert config["webhook"]["port"] == 9443 and config["leaderElection"]["leaderElect"] is True


def test_kueue_quota_check_and_device_class_mappings():
    four = kueue_config.kueue_manager_config(PLANS["four-gpu-server"])
    assert four["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared"
    fleet = kueue_config.kueue_manager_config(PLANS["mixed-fleet"])
    assert fleet["resources"]["deviceClassMappings"] == [
        {"name": "gpushare.cluster/dra-gpu", "deviceClassNames": ["gpu.nvidia.com"]}]


def test_kueue_base_config_not_mutated(plan):
    before = copy.deepcopy(kueue_config.KUEUE_BASE_CONFIGURATION)
    kueue_config.kueue_manager_config(plan)
    assert kueue_config.KUEUE_BASE_CONFIGURATION == before
