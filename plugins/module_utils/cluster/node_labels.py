# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gpu_operator role changes on the Nodes: the Plan's labels against the live ones.

Pure Python (no Ansible import), used as filters by roles/gpu_operator/tasks/node_labels.yml.
The role lists the Nodes once (one ``k8s_info``) and these functions decide, on the
controller, which nodes change at all, which change their MIG layout, which of those have
GPU pods in the way, and the one merge patch per changing node.

Labels the Plan no longer sets are removed: each patched node records the label keys it got
in ``MANAGED_LABELS_ANNOTATION``; the next patch deletes (JSON merge patch ``null``) the
recorded keys the Plan dropped. A node patched before that record existed falls back to
``PLAN_LABEL_KEYS``, every key the Plan can set. Labels anyone else set are never touched.
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.cluster.pods import gpu_layout_since, pods_on_changing_gpus
from ansible_collections.gpushare.cluster.plugins.module_utils.names import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    LAYOUT_SINCE_ANNOTATION,
    MANAGED_LABELS_ANNOTATION,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_STATE_LABEL,
    MIG_DISABLED_CONFIG,
    PLAN_LABEL_KEYS,
)


def _by_name(live_nodes: list) -> dict:
    return {n["metadata"]["name"]: n for n in live_nodes or []}


def _labels(node: dict) -> dict:
    return node["metadata"].get("labels") or {}


def _annotations(node: dict) -> dict:
    return node["metadata"].get("annotations") or {}


def _recorded_keys(node: dict) -> list:
    recorded = _annotations(node).get(MANAGED_LABELS_ANNOTATION)
    return recorded.split(",") if recorded else list(PLAN_LABEL_KEYS)


def node_changes(live_nodes: list, planned: list, live_mig_configs: dict | None = None) -> dict:
    """What the planned Node labels change against the live Nodes.

    Args:
        live_nodes: the cluster's Node objects, one list (a kubernetes.core.k8s lookup or k8s_info).
        planned: the Plan's Node label objects (the plan module's ``manifests.node_labels``), a
            list of ``{metadata: {name, labels}}``.
        live_mig_configs: the ``mig-configs`` of the MIG Manager's ConfigMap as it was in the
            cluster before this run applied its own (config name to mig-parted entries), a dict;
            it tells which GPUs a day-two change of the layout re-partitions.

    Returns:
        A dict: ``missing`` (planned nodes not in the cluster, a list of names), ``mig_changes``
        (node name to ``[live nvidia.com/mig.config or None, planned]``, for the nodes whose MIG
        layout changes), ``layout_since`` (node name to its gpushare.cluster/gpu-layout-since
        annotation, "" when absent) and ``live_mig_configs`` (as given, or empty).
    """
    live = _by_name(live_nodes)
    missing, mig_changes, since = [], {}, {}
    for obj in planned or []:
        name = obj["metadata"]["name"]
        node = live.get(name)
        if node is None:
            missing.append(name)
            continue
        want = obj["metadata"]["labels"].get(MIG_CONFIG_LABEL)
        have = _labels(node).get(MIG_CONFIG_LABEL)
        if want is not None and want != have:
            mig_changes[name] = [have, want]
        since[name] = _annotations(node).get(LAYOUT_SINCE_ANNOTATION, "")
    return {"missing": missing, "mig_changes": mig_changes, "layout_since": since,
            "live_mig_configs": dict(live_mig_configs or {})}


def mig_configs(configmaps: list) -> dict:
    """The ``mig-configs`` of the MIG Manager's ConfigMap as read from the cluster.

    Args:
        configmaps: what a kubernetes.core.k8s lookup of that ConfigMap returns: a list of
            ConfigMap objects, empty when it does not exist (first install).

    Returns:
        Config name to its mig-parted entries, a dict; empty when there is no ConfigMap or no
        ``config.yaml`` in it.
    """
    import yaml   # on the controller only, as the filter runs (not needed to import this module)

    for configmap in configmaps or []:
        text = (configmap.get("data") or {}).get("config.yaml")
        if text:
            return dict((yaml.safe_load(text) or {}).get("mig-configs") or {})
    return {}


def label_drift(live_nodes: list, known: dict, planned: list) -> list:
    """Labels of the MIG and device-plugin configs changed by hand since the previous plan.

    A live value that no state of the previous plan set, and that is not the new plan's
    either, was set by someone else; the gpu_operator role shows it and does not overwrite it
    unless told to. The GPU Operator's own default MIG config (``all-disabled``, which it sets
    on a node that has none) is not a change by hand.

    Args:
        live_nodes: the cluster's Node objects, one list (a kubernetes.core.k8s lookup or k8s_info).
        known: the plan module's ``changes.known_labels`` (node to label to the values the previous
            plan set in any state), a dict; empty for a first plan, which checks nothing.
        planned: the Plan's Node label objects (as for ``node_changes``).

    Returns:
        One line per drifted label, ``<node>: <label> is '<live>' in the cluster; the previous plan
        set <values>, this plan sets '<new>'``, a list of strings.
    """
    live = _by_name(live_nodes)
    lines = []
    for obj in planned or []:
        name = obj["metadata"]["name"]
        if name not in live or name not in (known or {}):
            continue
        for key in (MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL):
            have = _labels(live[name]).get(key)
            want = obj["metadata"]["labels"].get(key)
            set_before = known[name].get(key, [])
            if have in (None, want, MIG_DISABLED_CONFIG) or have in set_before:
                continue
            lines.append("%s: %s is %r in the cluster; the previous plan set %s, this plan sets %s"
                         % (name, key, have, " or ".join(repr(v) for v in set_before) or "none",
                            "none" if want is None else repr(want)))
    return lines


def busy_nodes(pods: list, plan: dict, changes: dict, exclude_namespaces: list | tuple = ()) -> dict:
    """The nodes whose MIG change has pods in the way, with those pods.

    A pod is in the way when it may hold a GPU the change re-partitions
    (pods.pods_on_changing_gpus): it asks for a resource that GPU serves now and started
    after the GPU's layout last changed, or that time is not known.

    Args:
        pods: the cluster's Pods, one list (a kubernetes.core.k8s lookup or k8s_info).
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        changes: the result of ``node_changes`` (its ``mig_changes`` and ``layout_since``).
        exclude_namespaces: namespaces whose pods never count (the GPU Operator's own), a list.

    Returns:
        Node name to the ``namespace/name`` of its pods in the way, a dict; nodes without any are
        left out.
    """
    on_node: dict = {}
    for pod in pods or []:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in changes["mig_changes"]:
            on_node.setdefault(node, []).append(pod)
    busy = {}
    for node, (have, want) in changes["mig_changes"].items():
        found = pods_on_changing_gpus(on_node.get(node, []), plan, node, have, want,
                                      changes["layout_since"].get(node, ""), list(exclude_namespaces),
                                      changes.get("live_mig_configs"))
        if found:
            busy[node] = found
    return busy


def node_label_patches(live_nodes: list, planned: list, plan: dict, changes: dict, now: str) -> list:
    """One JSON merge patch (a partial Node) per node whose labels must change.

    None for a node already as planned. A patch sets the planned labels, deletes the keys
    recorded as ours that the Plan dropped, records the new keys, and on a MIG change also sets
    nvidia.com/mig.config.state=pending and the changed GPUs' time in the
    gpushare.cluster/gpu-layout-since annotation.

    Args:
        live_nodes: the cluster's Node objects, one list (a kubernetes.core.k8s lookup or k8s_info).
        planned: the Plan's Node label objects (as for ``node_changes``).
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.
        changes: the result of ``node_changes``.
        now: the time of the change, RFC 3339 in UTC (e.g. ``2026-12-01T19:00:00Z``), recorded
            for the GPUs it re-partitions.

    Returns:
        The patches, each ``{apiVersion: v1, kind: Node, metadata: {name, labels, annotations}}``
        with only what changes (a label set to null is deleted), a list of dicts.
    """
    live = _by_name(live_nodes)
    patches = []
    for obj in planned or []:
        name = obj["metadata"]["name"]
        node = live.get(name)
        if node is None:
            continue
        want = dict(obj["metadata"]["labels"])
        have = _labels(node)
        labels = {k: v for k, v in want.items() if have.get(k) != v}
        labels.update({k: None for k in _recorded_keys(node) if k not in want and k in have})
        record = ",".join(sorted(want))
        annotations = {}
        if _annotations(node).get(MANAGED_LABELS_ANNOTATION) != record:
            annotations[MANAGED_LABELS_ANNOTATION] = record
        if name in changes["mig_changes"]:
            have_config, want_config = changes["mig_changes"][name]
            labels[MIG_CONFIG_STATE_LABEL] = "pending"
            annotations[LAYOUT_SINCE_ANNOTATION] = gpu_layout_since(
                plan, name, have_config, want_config, changes["layout_since"].get(name, ""), now,
                changes.get("live_mig_configs"))
        if not labels and not annotations:
            continue
        metadata = {"name": name}
        if labels:
            metadata["labels"] = labels
        if annotations:
            metadata["annotations"] = annotations
        patches.append({"apiVersion": "v1", "kind": "Node", "metadata": metadata})
    return patches


def mig_pending(live_nodes: list, names: list) -> list:
    """Of ``names``, the nodes whose MIG Manager has not reported success or failed yet.

    Args:
        live_nodes: the cluster's Node objects, one list (a kubernetes.core.k8s lookup or k8s_info).
        names: names of the nodes whose MIG layout changed, a list.

    Returns:
        The names whose nvidia.com/mig.config.state is neither ``success`` nor ``failed`` (or
        that are not in ``live_nodes``), in the order given, a list.
    """
    state = {n["metadata"]["name"]: _labels(n).get(MIG_CONFIG_STATE_LABEL) for n in live_nodes or []}
    return [n for n in names or [] if state.get(n) not in ("success", "failed")]


def mig_failed(live_nodes: list, names: list) -> list:
    """Of ``names``, the nodes whose MIG Manager reported nvidia.com/mig.config.state=failed.

    Args:
        live_nodes: the cluster's Node objects, one list (a kubernetes.core.k8s lookup or k8s_info).
        names: names of the nodes whose MIG layout changed, a list.

    Returns:
        The names whose nvidia.com/mig.config.state is ``failed``, in the order given, a list.
    """
    state = {n["metadata"]["name"]: _labels(n).get(MIG_CONFIG_STATE_LABEL) for n in live_nodes or []}
    return [n for n in names or [] if state.get(n) == "failed"]


def not_true(resources: list, condition: str, names: list) -> list:
    """Of ``names``, those missing from ``resources`` or whose ``condition`` is not True yet.

    E.g. the ClusterQueues that are not Active.

    Args:
        resources: objects with ``metadata.name`` and ``status.conditions``, one list (a
            kubernetes.core.k8s lookup or k8s_info).
        condition: the condition type, e.g. ``Active``.
        names: the names expected, a list.

    Returns:
        The names not found or whose condition is not ``True``, in the order given, a list.
    """
    ready = {r["metadata"]["name"] for r in resources or []
             if any(c.get("type") == condition and c.get("status") == "True"
                    for c in (r.get("status") or {}).get("conditions") or [])}
    return [n for n in names or [] if n not in ready]
