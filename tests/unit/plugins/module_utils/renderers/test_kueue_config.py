# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kueue manager Configuration (renderers/kueue_config.py): Kueue v0.19.2's shipped
configuration with the Plan's merged over it, for every example inventory."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLE_NAMES, ROOT, load_example

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


def _selects(selector: dict, namespace: str) -> bool:
    """A metav1.LabelSelector's matchExpressions against the label the API server puts on
    every namespace, kubernetes.io/metadata.name (k8s.io/apimachinery labels.Selector)."""
    for expr in selector["matchExpressions"]:
        inside = namespace in expr["values"]
        if (expr["operator"] == "In") != inside:
            return False
    return True


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_kueue_holds_unlabelled_workloads_in_team_namespaces_only(example):
    """Kueue v0.19.2 apis/config/v1beta2/configuration_types.go: manageJobsWithoutQueueName
    (bool) and managedJobsNamespaceSelector (a LabelSelector; for pods, deployments and
    statefulsets only matching namespaces are managed at all)."""
    config = kueue_config.kueue_manager_config(PLANS[example])
    assert config["manageJobsWithoutQueueName"] is True
    selector = config["managedJobsNamespaceSelector"]
    assert selector["matchExpressions"][0]["key"] == "kubernetes.io/metadata.name"
    team_namespaces = {ns for t in load_example(example)["gpushare_teams"] for ns in t.get("namespaces", [t["name"]])}
    for ns in team_namespaces:
        assert _selects(selector, ns), ns
    for ns in ("kube-system", "kueue-system", "gpu-operator", "monitoring", "default", "nvidia-dra-driver-gpu"):
        assert not _selects(selector, ns), ns


def test_every_top_level_key_is_a_field_of_kueue_configuration():
    """The Plan's keys against the json tags of Kueue's own Go type (apis/config/v1beta2/
    configuration_types.go of the module tests/twin/kueue-crds.sh fetches; the struct embeds
    ControllerManager inline)."""
    run = subprocess.run(["bash", str(ROOT / "tests" / "twin" / "kueue-crds.sh")], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    source = (Path(run.stdout.strip()).parents[3] / "apis" / "config" / "v1beta2" / "configuration_types.go").read_text()
    body = source.split("type Configuration struct {", 1)[1].split("\n}\n", 1)[0]
    inline = source.split("type ControllerManager struct {", 1)[1].split("\n}\n", 1)[0]
    fields = set(re.findall(r'json:"([A-Za-z]+)[,"]', body + inline))
    assert {"manageJobsWithoutQueueName", "managedJobsNamespaceSelector", "integrations", "resources"} <= fields
    for name in PLANS:
        assert set(kueue_config.kueue_manager_config(PLANS[name])) - {"apiVersion", "kind"} <= fields, name
