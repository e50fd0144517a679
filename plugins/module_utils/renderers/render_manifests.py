# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to the Kubernetes objects the roles apply, grouped by the stage that applies them.

Every object carries ``app.kubernetes.io/managed-by: gpushare.cluster`` so the roles can
prune what a later plan no longer has and touch nothing else.
"""

from __future__ import annotations

try:
    import yaml
except ImportError:     # ansible-core depends on PyYAML; this only keeps `import` sanity quiet
    yaml = None

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.kueue_config import kueue_manager_config
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_admission import admission_objects, pod_security_labels
from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.sharing_planner import cluster_mig_strategy


def _meta(name: str, namespace: str | None = None, labels: dict | None = None) -> dict:
    meta = {"name": name, "labels": dict(names.MANAGED_LABEL, **(labels or {}))}
    if namespace:
        meta["namespace"] = namespace
    return meta


def mig_parted_document(nodes_in_states: list[list[dict]]) -> dict:
    """One mig-parted config (version v1) holding every node's layout, windows included."""
    configs = {names.MIG_DISABLED_CONFIG: [{"devices": "all", "mig-enabled": False}]}
    for nodes in nodes_in_states:
        for node in nodes:
            mig = node.get("mig_config")
            if mig and mig["name"] != names.MIG_DISABLED_CONFIG:
                configs[mig["name"]] = mig["config"]
    return {"version": "v1", "mig-configs": dict(sorted(configs.items()))}


def device_plugin_documents(nodes_in_states: list[list[dict]]) -> dict[str, dict]:
    """Every node's config by name, plus ``default`` (names.DEVICE_PLUGIN_DEFAULT_CONFIG) for
    GPU nodes the plan does not know."""
    strategy = cluster_mig_strategy(n for nodes in nodes_in_states for n in nodes)
    docs = {names.DEVICE_PLUGIN_DEFAULT_CONFIG: {"version": "v1", "flags": {"migStrategy": strategy}}}
    for nodes in nodes_in_states:
        for node in nodes:
            if node.get("device_plugin_config"):
                docs[node["device_plugin_config"]["name"]] = node["device_plugin_config"]["config"]
    return dict(sorted(docs.items()))


def _literal(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _dumper():
    """A SafeDumper that writes multi-line strings (ConfigMap values) as literal blocks."""
    # libyaml's emitter when PyYAML has it: the fleet's manifests are megabytes.
    dumper = type("LiteralDumper", (getattr(yaml, "CSafeDumper", yaml.SafeDumper),), {})
    dumper.add_representer(str, _literal)
    return dumper


def _dump(document) -> str:
    return yaml.dump(document, Dumper=_dumper(), sort_keys=False, default_flow_style=False)


def _dump_all(documents) -> str:
    return yaml.dump_all(documents, Dumper=_dumper(), sort_keys=False, default_flow_style=False)


def gpu_operator_objects(plan: dict, namespace: str = names.GPU_OPERATOR_NAMESPACE) -> list[dict]:
    states = [plan["nodes"]] + [w["nodes"] for w in plan["windows"]]
    objects = [{
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(names.MIG_CONFIGMAP, namespace),
        "data": {"config.yaml": _dump(mig_parted_document(states))},
    }, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(names.DEVICE_PLUGIN_CONFIGMAP, namespace),
        "data": {name: _dump(doc) for name, doc in device_plugin_documents(states).items()},
    }]
    return objects


def node_label_objects(nodes: list[dict]) -> list[dict]:
    """Partial Node objects: applied as patches, they only set these labels."""
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n["name"], "labels": n["labels"]}}
            for n in nodes]


def namespace_objects(plan: dict) -> list[dict]:
    """The team namespaces (with their Pod Security level) and members' RoleBindings, then
    the admission policies that govern them (render_admission)."""
    objects = []
    for team in plan["teams"]:
        for ns in team["namespaces"]:
            labels = dict({names.TEAM_LABEL: team["name"]}, **pod_security_labels(team["pod_security"]))
            objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(ns, labels=labels)})
            if team["members"]:
                # Members may use what their namespace holds, its LocalQueue included; the
                # ClusterQueue's namespaceSelector keeps them out of other teams' quota.
                objects.append({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": _meta(names.TEAM_ROLEBINDING, ns),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": m}
                                 for m in team["members"]],
                })
    return objects + admission_objects(plan)


def state_nodes(plan: dict, window: dict | None = None) -> list[dict]:
    """Every node as it is in the base state or inside ``window`` (which lists only the nodes it changes)."""
    changed = {n["name"]: n for n in (window or {}).get("nodes", [])}
    return [changed.get(n["name"], n) for n in plan["nodes"]]


def state_kueue_objects(plan: dict, window: dict | None = None) -> list[dict]:
    """The Kueue objects of the base state or inside ``window``: the window's ResourceFlavors,
    ClusterQueues and Cohort replace the base ones; queues and priorities stay."""
    if not window:
        return list(plan["kueue"]["objects"])
    base = plan["kueue"]["objects"]
    replaced = {o["kind"] for o in window["kueue"]["objects"]}
    kind_order = list(dict.fromkeys(o["kind"] for o in base))  # flavors before the queues that name them
    objects = list(window["kueue"]["objects"]) + [o for o in base if o["kind"] not in replaced]
    return sorted(objects, key=lambda o: kind_order.index(o["kind"]))


def render(plan: dict, gpu_operator_namespace: str = names.GPU_OPERATOR_NAMESPACE,
           window: dict | None = None) -> dict[str, list[dict]]:
    """Objects per stage (namespaces, gpu_operator, node_labels, dra_driver, kueue) of the
    base state, or of the state inside ``window``. The ConfigMaps hold every state's configs."""
    return {
        "namespaces": namespace_objects(plan),
        "gpu_operator": gpu_operator_objects(plan, gpu_operator_namespace),
        "node_labels": node_label_objects(state_nodes(plan, window)),
        "dra_driver": list(plan["dra"]["claim_templates"]),
        "kueue": state_kueue_objects(plan, window),
    }


def manifest_files(plan: dict, gpu_operator_namespace: str = names.GPU_OPERATOR_NAMESPACE) -> list[dict]:
    """[{path, content}] for build/plan/manifests/: one multi-document YAML file per stage."""
    files = []
    for i, (stage, objects) in enumerate(render(plan, gpu_operator_namespace).items()):
        if objects:
            files.append({"path": "%02d-%s.yaml" % (i * 10, stage.replace("_", "-")),
                          "content": _dump_all(objects)})
    # The whole manager Configuration the kueue role applies (one source: kueue_config).
    files.append({"path": "kueue-configuration.yaml", "content": _dump(kueue_manager_config(plan))})
    for window in plan["windows"]:
        objects = node_label_objects(window["nodes"]) + window["kueue"]["objects"]
        files.append({"path": "windows/%s.yaml" % window["name"], "content": _dump_all(objects)})
    return files
