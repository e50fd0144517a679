# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The distributions table (plugins/module_utils/inventory/distributions.py) and the fact
gpushare_distribution computed from it: the kubeconfig and runtime paths the GPU stack got
before the table existed, for both distributions, with and without the role in the run."""

from __future__ import annotations

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions, model
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_helm

ARTIFACTS = "/inv/artifacts"
MICROK8S_PATHS = {
    "containerd_config": "/var/snap/microk8s/current/args/containerd-template.toml",
    "containerd_socket": "/var/snap/microk8s/common/run/containerd.sock",
    "runtime_config_source": "file=/var/snap/microk8s/current/args/containerd.toml",
    "kubelet_root_dir": "/var/snap/microk8s/common/var/lib/kubelet",
}
KUBEADM_PATHS = {
    "containerd_config": "/etc/containerd/config.toml",
    "containerd_socket": "/run/containerd/containerd.sock",
    "runtime_config_source": "",
    "containerd_dropin_dir": "/etc/containerd/conf.d",
    "kubelet_root_dir": "/var/lib/kubelet",
}


def plan(name: str) -> dict:
    return {"cluster": {"kubernetes_distribution": name}}


def test_the_planner_accepts_the_table_default_first():
    assert model.DISTRIBUTIONS == distributions.NAMES == ("kubeadm", "microk8s")
    assert distributions.DEFAULT == distributions.NAMES[0]
    assert distributions.names(None) == ["kubeadm", "microk8s"]


@pytest.mark.parametrize("name", distributions.NAMES)
def test_every_entry_is_complete(name):
    d = distributions.entry(name)
    assert d.name == name and d.role
    assert tuple(d.runtime) == distributions.RUNTIME_KEYS
    assert d.kubeconfig_var.startswith(d.role + "_") and d.kubeconfig_file.endswith(".conf")
    assert d.firewall_ports, "host_prep opens no port for %s" % name
    assert all(v.startswith("host_prep_firewall_ports_") for v in d.firewall_ports + d.control_plane_firewall_ports)
    described = distributions.describe(name)
    assert described["role"] == d.role and described["runtime"] == d.runtime
    described["runtime"]["containerd_config"] = "changed"
    assert d.runtime["containerd_config"] != "changed", "describe hands out the table itself"


@pytest.mark.parametrize("bad", ["k3s", "", None, ["kubeadm"]])
def test_an_unknown_distribution_names_the_known_ones(bad):
    with pytest.raises(ValueError, match="allowed: kubeadm, microk8s"):
        distributions.entry(bad)


def test_the_role_fact():
    fact = distributions.distribution_fact("microk8s", "/k/microk8s-admin.conf", "gpu01")
    assert fact == {"name": "microk8s", "role": "microk8s", "kubeconfig": "/k/microk8s-admin.conf",
                    "runtime": dict(MICROK8S_PATHS, containerd_dropin_dir=""), "node_name": "gpu01"}
    fact = distributions.distribution_fact("kubeadm", "/k/gpushare-admin.conf", "gpu01")
    assert fact["runtime"] == KUBEADM_PATHS


# --- plan_fact: what site.yml hands the GPU stack (formerly an if/else in site.yml) ------------

@pytest.mark.parametrize("name, host_vars, kubeconfig", [
    ("microk8s", {}, ARTIFACTS + "/secrets/microk8s-admin.conf"),
    ("microk8s", {"microk8s_kubeconfig_local_path": "/x/m.conf"}, "/x/m.conf"),
    ("microk8s", {"kubeadm_kubeconfig_local_path": "/x/k.conf"}, ARTIFACTS + "/secrets/microk8s-admin.conf"),
    ("kubeadm", {}, ARTIFACTS + "/secrets/gpushare-admin.conf"),
    ("kubeadm", {"kubeadm_cluster_name": "lab"}, ARTIFACTS + "/secrets/lab-admin.conf"),
    ("kubeadm", {"kubeadm_cluster_name": "lab", "kubeadm_kubeconfig_local_path": "/x/k.conf"}, "/x/k.conf"),
    ("kubeadm", {"microk8s_kubeconfig_local_path": "/x/m.conf"}, ARTIFACTS + "/secrets/gpushare-admin.conf"),
])
def test_without_the_role_the_kubeconfig_is_the_role_default_or_the_inventory_override(name, host_vars, kubeconfig):
    fact = distributions.plan_fact(plan(name), host_vars, ARTIFACTS)
    assert fact["kubeconfig"] == kubeconfig
    assert fact["name"] == fact["role"] == name and fact["node_name"] is None


def test_without_the_role_the_runtime_paths_are_those_always_needed():
    # MicroK8s' paths always (the GPU Operator's defaults do not fit); kubeadm's are the
    # operator's defaults, passed only as its role recorded them.
    assert distributions.plan_fact(plan("microk8s"), {}, ARTIFACTS)["runtime"] == MICROK8S_PATHS
    assert distributions.plan_fact(plan("kubeadm"), {}, ARTIFACTS)["runtime"] == {}


@pytest.mark.parametrize("name", distributions.NAMES)
def test_the_fact_the_role_recorded_wins(name):
    recorded = distributions.distribution_fact(name, "/fetched/admin.conf", "cp1")
    host_vars = {distributions.FACT: recorded, distributions.entry(name).kubeconfig_var: "/other.conf"}
    assert distributions.plan_fact(plan(name), host_vars, ARTIFACTS) == recorded


def test_a_fact_of_another_distribution_is_ignored():
    recorded = distributions.distribution_fact("microk8s", "/fetched/admin.conf", "cp1")
    fact = distributions.plan_fact(plan("kubeadm"), {distributions.FACT: recorded}, ARTIFACTS)
    assert fact["kubeconfig"] == ARTIFACTS + "/secrets/gpushare-admin.conf" and fact["runtime"] == {}


def test_host_variables_are_those_plan_fact_reads():
    assert distributions.host_variables(plan("kubeadm")) == [
        "gpushare_distribution", "kubeadm_kubeconfig_local_path", "kubeadm_cluster_name"]
    assert distributions.host_variables(plan("microk8s")) == ["gpushare_distribution", "microk8s_kubeconfig_local_path"]


def test_the_runtime_paths_for_the_gpu_stack_are_those_of_before_the_table():
    microk8s, kubeadm = plan("microk8s"), plan("kubeadm")
    recorded = distributions.distribution_fact("microk8s", "/k.conf", "cp1")["runtime"]
    computed = distributions.plan_fact(microk8s, {}, ARTIFACTS)["runtime"]
    assert (render_helm.runtime_paths(microk8s, recorded) == render_helm.runtime_paths(microk8s, computed)
            == render_helm.runtime_paths(microk8s) == MICROK8S_PATHS)
    # kubeadm: the paths its role recorded in the run, as they are; none without the role.
    recorded = distributions.distribution_fact("kubeadm", "/k.conf", "cp1")["runtime"]
    computed = distributions.plan_fact(kubeadm, {}, ARTIFACTS)["runtime"]
    assert render_helm.runtime_paths(kubeadm, recorded) == {k: v for k, v in KUBEADM_PATHS.items() if v}
    assert render_helm.runtime_paths(kubeadm, computed) == render_helm.runtime_paths(kubeadm) == {}
