# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes for dynamic MIG: the plan play refuses a Kubernetes minor without partitionable
devices before any host is touched, and the kubeadm and MicroK8s roles set the feature gate the
Plan asks for (KEP-4815 ``DRAPartitionableDevices``: off by default before 1.36, needed on
kube-apiserver and kube-scheduler). The kubeadm configuration's fields are checked against
kubeadm's v1beta4 Go types of Kubernetes 1.35.4 (the module tests/twin/kube-openapi.sh fetches)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpushare.cluster.plugins.filter.__gpu_stack import FilterModule
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import ROOT, load_example

FILTERS = FilterModule().filters()


def _trusted(value):
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def kubeadm_config(gates: dict) -> list[dict]:
    """roles/kubeadm/templates/kubeadm-config.yaml.j2 rendered with the role's defaults and vars."""
    role = ROOT / "roles" / "kubeadm"
    variables = _trusted(yaml.safe_load((role / "defaults" / "main.yml").read_text()))
    variables["_kubeadm_kubelet_config"] = _trusted(yaml.safe_load((role / "vars" / "main.yml").read_text())
                                                    ["_kubeadm_kubelet_config"])
    variables.update(kubeadm_feature_gates=gates, inventory_hostname="cp01", groups={}, ansible_managed="test",
                     _kubeadm_node_name="cp01", _kubeadm_containerd_socket="/run/containerd/containerd.sock",
                     kubeadm_apiserver_advertise_address="192.0.2.1", kubeadm_kubernetes_version="1.35.4",
                     kubeadm_image_repository="registry.k8s.io")
    text = Templar(loader=DataLoader(), variables=variables).template(
        trust_as_template((role / "templates" / "kubeadm-config.yaml.j2").read_text()))
    return {d["kind"]: d for d in yaml.safe_load_all(text) if d}


def _json_tags(source: str, struct: str) -> set[str]:
    body = source.split("type %s struct {" % struct, 1)[1].split("\n}\n", 1)[0]
    return set(re.findall(r'json:"([A-Za-z]+)[,"]', body))


def test_kubeadm_sets_the_gate_on_the_control_plane_and_the_kubelet():
    docs = kubeadm_config({"DRAPartitionableDevices": True})
    cluster = docs["ClusterConfiguration"]
    for component in ("apiServer", "controllerManager", "scheduler"):
        assert cluster[component]["extraArgs"] == [{"name": "feature-gates", "value": "DRAPartitionableDevices=true"}]
    assert docs["KubeletConfiguration"]["featureGates"] == {"DRAPartitionableDevices": True}
    assert docs["KubeletConfiguration"]["cgroupDriver"] == "systemd"
    run = subprocess.run(["bash", str(ROOT / "tests" / "twin" / "kube-openapi.sh")], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stderr
    module = Path(run.stdout.strip()).parents[2]
    types = (module / "cmd" / "kubeadm" / "app" / "apis" / "kubeadm" / "v1beta4" / "types.go").read_text()
    assert {"apiServer", "controllerManager", "scheduler"} <= _json_tags(types, "ClusterConfiguration")
    assert "extraArgs" in _json_tags(types, "ControlPlaneComponent")
    assert _json_tags(types, "Arg") == {"name", "value"}


def test_kubeadm_without_gates_changes_nothing():
    docs = kubeadm_config({})
    assert not {"apiServer", "controllerManager", "scheduler"} & set(docs["ClusterConfiguration"])
    assert "featureGates" not in docs["KubeletConfiguration"]


def test_microk8s_writes_the_gate_into_each_services_arguments():
    tasks = yaml.safe_load((ROOT / "roles" / "microk8s" / "tasks" / "install.yml").read_text())
    task = next(t for t in tasks if "Feature gates" in t["name"])
    assert task["loop"] == ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"]
    role_vars = yaml.safe_load((ROOT / "roles" / "microk8s" / "vars" / "main.yml").read_text())
    line = Templar(loader=DataLoader(), variables={
        "microk8s_feature_gates": {"DRAPartitionableDevices": True},
        "_microk8s_feature_gates_arg": trust_as_template(role_vars["_microk8s_feature_gates_arg"])}).template(
        trust_as_template(task["ansible.builtin.lineinfile"]["line"]))
    assert line.strip() == "--feature-gates=DRAPartitionableDevices=true"
    restart = next(t for t in tasks if "Restart Kubernetes services" in t["name"])
    assert "__microk8s_feature_gate_args is changed" in restart["when"]


def _dynamic_plan(distribution: str) -> dict:
    inventory = load_example("static-and-dynamic-mig")
    inventory["gpushare_policy"]["kubernetes_distribution"] = distribution
    return build_plan(inventory)


class HostVars(dict):
    """Stands for hostvars[host]: the filter may read the version variable only."""

    def __getitem__(self, name):
        assert name in ("kubeadm_kubernetes_minor", "microk8s_channel"), "read %s" % name
        return super().__getitem__(name)


def test_the_plan_play_refuses_a_kubernetes_without_partitionable_devices():
    """MicroK8s' default channel is 1.34/stable (roles/microk8s/defaults/main.yml): refused,
    naming the variable, its value and the fix; 1.35 and 1.36 pass; kubeadm's default 1.35 passes."""
    microk8s = _dynamic_plan("microk8s")
    assert microk8s["cluster"]["kubernetes"]["feature_gates"] == {"DRAPartitionableDevices": True}
    [problem] = FILTERS["kubernetes_problems"](microk8s, HostVars(other="not read"))
    assert problem.startswith("microk8s_channel: '1.34/stable' installs Kubernetes 1.34")
    assert 'Set microk8s_channel: "1.35/stable"' in problem
    assert FILTERS["kubernetes_problems"](microk8s, HostVars(microk8s_channel="1.36/stable")) == []
    kubeadm = _dynamic_plan("kubeadm")
    assert FILTERS["kubernetes_problems"](kubeadm, HostVars()) == []
    [problem] = FILTERS["kubernetes_problems"](kubeadm, HostVars(kubeadm_kubernetes_minor="1.34"))
    assert "kubeadm_kubernetes_minor: '1.34'" in problem and 'Set kubeadm_kubernetes_minor: "1.35"' in problem
    assert FILTERS["kubernetes_feature_gates"](kubeadm) == {"kubeadm_feature_gates": {"DRAPartitionableDevices": True}}


def test_no_dynamic_gpu_needs_nothing_of_kubernetes():
    plan = build_plan(load_example("mixed-fleet"))
    assert plan["cluster"]["kubernetes"] == {}
    assert FILTERS["kubernetes_problems"](plan, HostVars(kubeadm_kubernetes_minor="1.30")) == []
    assert FILTERS["kubernetes_feature_gates"](plan) == {}


def test_the_check_runs_in_the_plan_play_before_any_host_is_touched():
    plays = yaml.safe_load((ROOT / "playbooks" / "kubernetes.yml").read_text())
    assert plays[0]["hosts"] == "localhost" and "always" in plays[0]["tags"]
    assert any("kubernetes_problems" in str(t) for t in plays[0]["tasks"])
    kubernetes = next(p for p in plays if p["name"] == "Kubernetes")
    names = [t["name"] for t in kubernetes["tasks"]]
    assert names.index("Kubernetes feature gates the plan needs") < len(names) - 1
    assert "kubernetes_feature_gates" in str(kubernetes["tasks"][0])


@pytest.mark.parametrize("role,variable", [("kubeadm", "kubeadm_kubernetes_minor"), ("microk8s", "microk8s_channel")])
def test_the_version_defaults_are_the_roles(role, variable):
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    entry = distributions.entry(role)
    assert (entry.version_var, entry.version_default) == (variable, defaults[variable])
    assert entry.feature_gates_var in defaults
