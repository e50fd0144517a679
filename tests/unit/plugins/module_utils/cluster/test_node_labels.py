# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_labels: which nodes the gpu_operator role patches, and how (the twin test
tests/twin/test_site.py applies the patches to a real apiserver)."""


from ansible_collections.gpushare.cluster.plugins.module_utils.cluster import node_labels as nl  # noqa: E402

DRA = {"gpushare.cluster/gpu-model": "h200-141gb", "nvidia.com/dra-kubelet-plugin": "true",
       "nvidia.com/gpu.deploy.device-plugin": "false", "nvidia.com/mig.config": "all-disabled"}
WHOLE = {"gpushare.cluster/gpu-model": "h200-141gb", "nvidia.com/device-plugin.config": "gpushare-n1",
         "nvidia.com/mig.config": "all-disabled"}
PLAN = {"nodes": [{"name": "n1", "gpus": [{"index": 0}]}], "states": []}


def _live(labels, annotations=None):
    return [{"metadata": {"name": "n1", "labels": dict(labels, **{"kubernetes.io/hostname": "n1"}),
                          "annotations": annotations or {}}}]


def _planned(labels):
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": labels}}]


def _patches(live, planned):
    changes = nl.node_changes(live, planned)
    return nl.node_label_patches(live, planned, PLAN, changes, "2026-01-01T00:00:00Z")


def test_node_already_as_planned_is_not_patched():
    record = {nl.MANAGED_LABELS_ANNOTATION: ",".join(sorted(WHOLE))}
    assert _patches(_live(WHOLE, record), _planned(WHOLE)) == []


def test_labels_the_plan_dropped_are_deleted_and_others_kept():
    # The node was a DRA node (patched before the record existed); the plan moves it back.
    (patch,) = _patches(_live(DRA), _planned(WHOLE))
    labels = patch["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] is None
    assert labels["nvidia.com/dra-kubelet-plugin"] is None
    assert labels["nvidia.com/device-plugin.config"] == "gpushare-n1"
    assert "kubernetes.io/hostname" not in labels and "gpushare.cluster/gpu-model" not in labels
    assert patch["metadata"]["annotations"][nl.MANAGED_LABELS_ANNOTATION] == ",".join(sorted(WHOLE))


def test_only_recorded_keys_are_deleted():
    # A label of a key the plan can set, but recorded as not ours, is left alone.
    live = _live(dict(WHOLE, **{"nvidia.com/gpu.deploy.driver": "false"}),
                 {nl.MANAGED_LABELS_ANNOTATION: ",".join(sorted(WHOLE))})
    assert _patches(live, _planned(WHOLE)) == []


def test_missing_nodes_and_mig_changes():
    planned = _planned(dict(WHOLE, **{"nvidia.com/mig.config": "gpushare-n1"})) + [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gone", "labels": WHOLE}}]
    changes = nl.node_changes(_live(WHOLE), planned)
    assert changes["missing"] == ["gone"]
    assert changes["mig_changes"] == {"n1": ["all-disabled", "gpushare-n1"]}
    (patch,) = nl.node_label_patches(_live(WHOLE), planned, PLAN, changes, "2026-01-01T00:00:00Z")
    assert patch["metadata"]["labels"]["nvidia.com/mig.config.state"] == "pending"
    assert patch["metadata"]["annotations"]["gpushare.cluster/gpu-layout-since"] == '{"0":"2026-01-01T00:00:00Z"}'


def test_mig_pending_and_failed():
    nodes = [{"metadata": {"name": n, "labels": {"nvidia.com/mig.config.state": st}}}
             for n, st in (("a", "failed"), ("b", "success"), ("c", "pending"))]
    assert nl.mig_pending(nodes, ["a", "b", "c", "d"]) == ["c", "d"]
    assert nl.mig_failed(nodes, ["a", "b", "c"]) == ["a"]


def test_busy_nodes_only_pods_on_changing_nodes():
    pods = [{"metadata": {"namespace": "t", "name": "p"}, "spec": {"nodeName": "other", "containers": [
        {"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}]
    changes = {"mig_changes": {"n1": ["all-disabled", "x"]}, "layout_since": {"n1": ""}}
    assert nl.busy_nodes(pods, PLAN, changes) == {}


def test_not_true_names_missing_and_inactive():
    cqs = [{"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Active", "status": "True"}]}},
           {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Active", "status": "False"}]}},
           {"metadata": {"name": "x"}}]
    assert nl.not_true(cqs, "Active", ["a", "b", "c"]) == ["b", "c"]


def test_mig_configs_reads_the_live_configmap():
    configmap = {"data": {"config.yaml": "version: v1\nmig-configs:\n  gpushare-n1-0123abcd:\n"
                                         "  - devices: [0]\n    mig-enabled: true\n    mig-devices: {1g.18gb: 7}\n"}}
    assert nl.mig_configs([configmap]) == {"gpushare-n1-0123abcd": [
        {"devices": [0], "mig-enabled": True, "mig-devices": {"1g.18gb": 7}}]}
    assert nl.mig_configs([]) == {}
    assert nl.mig_configs([{"data": {}}]) == {}


def test_label_drift_names_a_layout_set_by_hand():
    """The previous plan set gpu01's MIG config to A by day and B at night; the cluster has C."""
    live = [{"metadata": {"name": "gpu01", "labels": {
        "nvidia.com/mig.config": "by-hand", "nvidia.com/device-plugin.config": "gpushare-gpu01"}}}]
    known = {"gpu01": {"nvidia.com/mig.config": ["gpushare-gpu01-aaaa", "gpushare-gpu01-bbbb"],
                       "nvidia.com/device-plugin.config": ["gpushare-gpu01"]}}
    planned = [{"metadata": {"name": "gpu01", "labels": {
        "nvidia.com/mig.config": "gpushare-gpu01-cccc", "nvidia.com/device-plugin.config": "gpushare-gpu01"}}}]
    assert nl.label_drift(live, known, planned) == [
        "gpu01: nvidia.com/mig.config is 'by-hand' in the cluster; the previous plan set 'gpushare-gpu01-aaaa' or "
        "'gpushare-gpu01-bbbb', this plan sets 'gpushare-gpu01-cccc'"]
    live[0]["metadata"]["labels"]["nvidia.com/mig.config"] = "gpushare-gpu01-bbbb"      # the night state: ours
    assert nl.label_drift(live, known, planned) == []
    assert nl.label_drift(live, {}, planned) == []                                       # first plan: nothing known


def test_label_drift_leaves_the_operator_default_alone():
    """The GPU Operator labels a node without a MIG config all-disabled itself: not by hand.
    A node the plan gives no MIG config shows "sets none"."""
    planned = [{"metadata": {"name": "l4", "labels": {"nvidia.com/device-plugin.config": "gpushare-l4"}}}]
    known = {"l4": {"nvidia.com/device-plugin.config": ["gpushare-l4"]}}
    live = [{"metadata": {"name": "l4", "labels": {"nvidia.com/mig.config": "all-disabled"}}}]
    assert nl.label_drift(live, known, planned) == []
    live[0]["metadata"]["labels"]["nvidia.com/mig.config"] = "all-1g.18gb"
    assert nl.label_drift(live, known, planned) == [
        "l4: nvidia.com/mig.config is 'all-1g.18gb' in the cluster; the previous plan set none, this plan sets none"]
