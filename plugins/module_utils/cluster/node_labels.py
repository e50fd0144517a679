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
    LAYOUT_SINCE_ANNOTATION,
    MANAGED_LABELS_ANNOTATION,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_STATE_LABEL,
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


def node_changes(live_nodes: list, planned: list) -> dict:
    """For the planned Node label objects against the live Nodes: ``missing`` (planned nodes
    not in the cluster), ``mig_changes`` (node -> [live mig.config or None, planned]) and
    ``layout_since`` (node -> its LAYOUT_SINCE_ANNOTATION, "" when absent)."""
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
    return {"missing": missing, "mig_changes": mig_changes, "layout_since": since}


def busy_nodes(pods: list, plan: dict, changes: dict, exclude_namespaces: list | tuple = ()) -> dict:
    """node -> the pods in the way of its MIG change (pods.pods_on_changing_gpus), for
    the nodes that have any. ``pods`` is one list of the cluster's Pods (one k8s_info)."""
    on_node: dict = {}
    for pod in pods or []:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in changes["mig_changes"]:
            on_node.setdefault(node, []).append(pod)
    busy = {}
    for node, (have, want) in changes["mig_changes"].items():
        found = pods_on_changing_gpus(on_node.get(node, []), plan, node, have, want,
                                      changes["layout_since"].get(node, ""), list(exclude_namespaces))
        if found:
            busy[node] = found
    return busy


def node_label_patches(live_nodes: list, planned: list, plan: dict, changes: dict, now: str) -> list:
    """One JSON merge patch (a partial Node) per node whose labels must change, none for a
    node already as planned. A patch sets the planned labels, deletes the keys recorded as
    ours that the Plan dropped, records the new keys, and on a MIG change also sets
    mig.config.state=pending and the changed GPUs' time in LAYOUT_SINCE_ANNOTATION."""
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
                plan, name, have_config, want_config, changes["layout_since"].get(name, ""), now)
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
    """Of ``names``, the nodes whose MIG Manager has not reported success or failed yet."""
    state = {n["metadata"]["name"]: _labels(n).get(MIG_CONFIG_STATE_LABEL) for n in live_nodes or []}
    return [n for n in names or [] if state.get(n) not in ("success", "failed")]


def mig_failed(live_nodes: list, names: list) -> list:
    """Of ``names``, the nodes whose MIG Manager reported nvidia.com/mig.config.state=failed."""
    state = {n["metadata"]["name"]: _labels(n).get(MIG_CONFIG_STATE_LABEL) for n in live_nodes or []}
    return [n for n in names or [] if state.get(n) == "failed"]


def not_true(resources: list, condition: str, names: list) -> list:
    """Of ``names``, those missing from ``resources`` (one k8s_info list) or whose
    ``condition`` is not True yet, e.g. ClusterQueues not Active."""
    ready = {r["metadata"]["name"] for r in resources or []
             if any(c.get("type") == condition and c.get("status") == "True"
                    for c in (r.get("status") or {}).get("conditions") or [])}
    return [n for n in names or [] if n not in ready]
