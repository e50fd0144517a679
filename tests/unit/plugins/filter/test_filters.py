"""The gpushare.cluster filter plugins of the GPU stack: the public ones (plugins/filter/gpushare.py)
and the roles' internal ones (plugins/filter/__gpu_stack.py): each filter is a function of
module_utils (render_helm, kueue_config, render_monitoring, prune, node_labels, kube_calls,
model) and gives that function's result."""

from __future__ import annotations

import importlib
import json

import pytest


from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpushare.cluster.plugins.module_utils import names  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import kube_calls, multikueue_checks, node_labels, prune  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory import distributions  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import kueue_config, render_helm, render_monitoring  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_multikueue  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render  # noqa: E402
from inventories import EXAMPLE_NAMES, load_example  # noqa: E402

PUBLIC = importlib.import_module("ansible_collections.gpushare.cluster.plugins.filter.gpushare").FilterModule().filters()
INTERNAL = importlib.import_module("ansible_collections.gpushare.cluster.plugins.filter.__gpu_stack").FilterModule().filters()
FILTERS = {**INTERNAL, **PUBLIC}

# module -> the filters that run its functions
MODULES = {
    render_helm: ("gpu_operator_values", "dra_driver_values", "kueue_values", "kube_prometheus_values",
                  "config_hash", "dra_mig_layout_hash"),
    kueue_config: ("kueue_manager_config_yaml",),
    render_monitoring: ("monitoring_objects",),
    prune: ("unmanaged", "window_flavors", "prune_candidates"),
    node_labels: ("mig_configs", "label_drift", "node_changes", "busy_nodes", "node_label_patches", "not_true"),
    kube_calls: ("k8s_auth",),
    names: ("managed_label", "k8s_name", "pinned_version"),
}
MODULE_OF = {name: module for module, names in MODULES.items() for name in names}
DISTRIBUTIONS = {"distributions": distributions.names, "distribution": distributions.describe,
                 "distribution_fact": distributions.distribution_fact,
                 "kubernetes_feature_gates": distributions.kubernetes_feature_gates}
# The multikueue role's filters, prefixed with multikueue_.
MULTIKUEUE = {"multikueue_kubeconfig_secret": render_multikueue.kubeconfig_secret,
              "multikueue_unreachable": multikueue_checks.unreachable,
              "multikueue_inactive": multikueue_checks.inactive}


def _json(value):
    return json.loads(json.dumps(value))


def test_filter_names_map_to_the_renderers():
    others = {"inventory_nodes", "node_name", "team_lines", "plan_distribution", "kubernetes_problems"}
    assert not set(PUBLIC) & set(INTERNAL)
    assert set(FILTERS) == set(MODULE_OF) | set(DISTRIBUTIONS) | set(MULTIKUEUE) | others
    for name, module in MODULE_OF.items():
        assert FILTERS[name].__wrapped__ is getattr(module, name), name
    for name, function in {**DISTRIBUTIONS, **MULTIKUEUE}.items():
        assert FILTERS[name].__wrapped__ is function, name
    for name, function in FILTERS.items():
        assert function.__doc__ and (name in function.__doc__ or function.__name__ == name), name


def test_inventory_nodes_maps_hosts_without_a_gpushare_node_to_none():
    hostvars = {"gpu01": {"gpushare_node": {"gpu_model": "h200", "gpu_count": 1}}, "gpu02": {}}
    assert FILTERS["inventory_nodes"](["gpu01", "gpu02"], hostvars) == {
        "gpu01": {"gpu_model": "h200", "gpu_count": 1}, "gpu02": None}


def test_filters_give_the_renderers_results():
    for example in EXAMPLE_NAMES:
        plan = build_plan(load_example(example))
        manifests = render(plan)
        device_plugin = next(o for o in manifests["gpu_operator"]
                             if o["metadata"]["name"] == names.DEVICE_PLUGIN_CONFIGMAP)
        objects = manifests["namespaces"] + manifests["kueue"]
        calls = [
            ("gpu_operator_values", (plan,)),
            ("gpu_operator_values", (plan, {}, "v26.3.3", True, False)),
            ("kueue_values", (plan, {"tag": "v0.19.2"}, True, "monitoring")),
            ("kueue_manager_config_yaml", (plan,)),
            ("kube_prometheus_values", (plan, "gpushare-grafana-admin", {"revision": 3})),
            ("config_hash", (device_plugin["data"],)),
            ("dra_mig_layout_hash", (plan,)),
            ("unmanaged", (objects,)),
            ("window_flavors", (plan,)),
            ("prune_candidates", ([{"item": {"kind": "Cohort", "api_version": "kueue.x-k8s.io/v1beta2"},
                                    "resources": [{"metadata": {"name": "gone"}}]}], objects, [])),
            ("monitoring_objects", (plan, "monitoring", "namespace", 3600)),
        ]
        if render_helm.dra_nodes(plan):
            calls.append(("dra_driver_values", (plan, {}, False)))
        for name, args in calls:
            assert FILTERS[name](*args) == _json(getattr(MODULE_OF[name], name)(*args)), (example, name)


def test_names_and_pins_for_the_roles():
    assert FILTERS["k8s_name"]("field_manager") == names.FIELD_MANAGER
    assert FILTERS["k8s_name"]("gpu_operator_namespace") == names.GPU_OPERATOR_NAMESPACE
    assert FILTERS["pinned_version"]("kueue") == names.VERSIONS["kueue"]
    assert names.KUEUE_IMAGE["tag"] == "v" + names.VERSIONS["kueue"]  # the image follows the chart
    for bad in ("no_such_name", "FIELD_MANAGER", "versions", "managed_label"):
        with pytest.raises(AnsibleFilterError, match="gpushare.cluster.k8s_name: names.py defines no name"):
            FILTERS["k8s_name"](bad)
    with pytest.raises(AnsibleFilterError, match="no version pinned for 'kueu'"):
        FILTERS["pinned_version"]("kueu")


def test_k8s_auth_leaves_out_what_is_not_given():
    assert FILTERS["k8s_auth"]("/etc/admin.conf", "") == {"kubeconfig": "/etc/admin.conf"}
    assert FILTERS["k8s_auth"](None, None) == {}
    assert FILTERS["k8s_auth"]("", "prod") == {"context": "prod"}


def test_prune_candidates_reads_a_looped_lookup_as_a_looped_k8s_info():
    kind = {"kind": "Cohort", "api_version": "kueue.x-k8s.io/v1beta2"}
    gone = [{"metadata": {"name": "gone"}}, {"metadata": {"name": "kept"}}]
    keep = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "kept"}}]
    expected = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "gone"}}]
    assert prune.prune_candidates([{"item": kind, "resources": gone}], keep) == expected
    assert prune.prune_candidates([{"item": kind, "ansible_facts": {"_kueue_labelled_objects": gone}}], keep) == expected


def test_filters_give_plain_json_data():
    plan = build_plan(load_example("four-gpu-server"))
    assert FILTERS["kueue_manager_config_yaml"](plan) == kueue_config.kueue_manager_config_yaml(plan)
    objects = FILTERS["monitoring_objects"](plan, "monitoring")
    assert objects == json.loads(json.dumps(render_monitoring.monitoring_objects(plan)))


def test_filter_reports_a_bad_plan():
    plan = build_plan(load_example("four-gpu-server"))  # no DRA nodes
    with pytest.raises(ValueError):
        render_helm.dra_driver_values(plan)
    with pytest.raises(AnsibleFilterError, match="gpushare.cluster.dra_driver_values"):
        FILTERS["dra_driver_values"](plan)


class HostVars(dict):
    """Stands for hostvars[host]: plan_distribution may only read the variables it needs."""

    def __getitem__(self, name):
        assert name in distributions.host_variables(PLAN_OF["microk8s"]) + distributions.host_variables(
            PLAN_OF["kubeadm"]), "read %s" % name
        return super().__getitem__(name)


PLAN_OF = {name: {"cluster": {"kubernetes_distribution": name}} for name in distributions.NAMES}


def test_the_distribution_filters():
    assert FILTERS["distributions"](None) == ["kubeadm", "microk8s"]
    assert FILTERS["distribution"]("microk8s")["role"] == "microk8s"
    with pytest.raises(AnsibleFilterError, match="gpushare.cluster.distribution: 'k3s' is not .*allowed: kubeadm, microk8s"):
        FILTERS["distribution"]("k3s")
    fact = FILTERS["distribution_fact"]("kubeadm", "/a/gpushare-admin.conf", "gpu01")
    assert fact["kubeconfig"] == "/a/gpushare-admin.conf" and fact["node_name"] == "gpu01"
    host_vars = HostVars(kubeadm_cluster_name="lab", other="not read")
    assert FILTERS["plan_distribution"](PLAN_OF["kubeadm"], host_vars, "/a")["kubeconfig"] == "/a/secrets/lab-admin.conf"
    assert FILTERS["plan_distribution"](PLAN_OF["microk8s"], HostVars(gpushare_distribution=fact), "/a")["runtime"] \
        == distributions.assumed_runtime("microk8s")
    with pytest.raises(AnsibleFilterError, match="gpushare.cluster.plan_distribution: 'k3s'"):
        FILTERS["plan_distribution"]({"cluster": {"kubernetes_distribution": "k3s"}}, {}, "/a")


def test_multikueue_unreachable_names_the_inventory_path_and_the_fix():
    cluster = {"name": "site-b", "path": "gpushare_multikueue.workers[1]", "kubeconfig": "/k/site-b", "context": None}
    results = [{"item": dict(cluster, name="site-a", path="gpushare_multikueue.workers[0]"), "failed": False},
               {"item": cluster, "failed": True, "msg": "Max retries exceeded\n  Connection refused"}]
    assert FILTERS["multikueue_unreachable"](results) == [
        "gpushare_multikueue.workers[1].kubeconfig: cluster site-b does not answer (got '/k/site-b'): Max retries "
        "exceeded Connection refused. Nothing was applied. Check that the kubeconfig exists on the controller and that "
        "its API server is up and reachable, or remove the cluster from gpushare_multikueue"]


def test_multikueue_inactive_gives_kueues_reason():
    clusters = [{"metadata": {"name": "site-a"}, "status": {"conditions": [{"type": "Active", "status": "True"}]}},
                {"metadata": {"name": "site-b"}, "status": {"conditions": [
                    {"type": "Active", "status": "False", "reason": "ClientConnectionFailed", "message": "refused"}]}}]
    assert FILTERS["multikueue_inactive"](clusters, ["site-a", "site-b", "site-c"]) == [
        "site-b: ClientConnectionFailed: refused", "site-c: no Active condition yet"]
