# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pruning: the labelled objects a later Plan no longer has (the kueue role deletes them),
never an object without the managed-by label, never a ResourceFlavor a sharing window needs,
never twice; and the objects a Plan wants that an earlier prune is still deleting."""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.names import MANAGED_BY_KEY, MANAGED_BY_VALUE


def object_key(obj: dict) -> str:
    return "%s/%s/%s" % (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def unmanaged(objects: list) -> list[str]:
    """Keys of the objects lacking app.kubernetes.io/managed-by=gpushare.cluster.

    Args:
        objects: Kubernetes objects, a list of dicts with ``kind`` and ``metadata`` (the objects
            of the Plan a role is about to apply).

    Returns:
        ``Kind/namespace/name`` of each object without that label (namespace empty when
        cluster-scoped), a list of strings; empty when every object has it.
    """
    return [object_key(o) for o in objects or []
            if (o["metadata"].get("labels") or {}).get(MANAGED_BY_KEY) != MANAGED_BY_VALUE]


def window_flavors(plan: dict) -> list[str]:
    """ResourceFlavors the base state or some sharing window needs, kept from pruning.

    They are never pruned, whichever state is applied now (a ClusterQueue of the next state
    refers to them).

    Args:
        plan: the plan module's ``plan`` result (``gpushare_plan.plan``), a dict.

    Returns:
        The ResourceFlavor names, sorted, a list of strings.
    """
    states = [plan["kueue"]["objects"]] + [w["kueue"]["objects"] for w in plan.get("windows", [])]
    return sorted({o["metadata"]["name"] for objects in states for o in objects if o["kind"] == "ResourceFlavor"})


def _listed(results: list):
    """Each object of a looped read, with kind and apiVersion from its loop item (list items of
    built-in kinds carry neither)."""
    for result in results or []:
        listed = result["resources"] if "resources" in result else next(iter((result.get("ansible_facts") or {}).values()), [])
        for obj in listed or []:
            yield dict(obj, kind=result["item"]["kind"], apiVersion=result["item"]["api_version"])


def prune_candidates(results: list, wanted: list, protected_flavors: list | tuple = ()) -> list[dict]:
    """Labelled objects that the Plan no longer has; ResourceFlavors a window needs are kept.

    An object already being deleted (``metadata.deletionTimestamp`` set) is left out: deleting
    it again changes nothing and would report a change on every run. Kueue keeps a pruned
    ClusterQueue, and the ResourceFlavors it names, until the workloads it admitted end (its
    ``kueue.x-k8s.io/resource-in-use`` finalizer).

    Args:
        results: the results of a looped read of the labelled objects, one kind per loop item: each
            a dict with ``item`` (``api_version``, ``kind``) and the objects found, under
            ``resources`` (kubernetes.core.k8s_info) or as the one fact a looped set_fact set (a
            kubernetes.core.k8s lookup).
        wanted: the objects the Plan has, a list of dicts with ``kind`` and ``metadata``; an object
            found with the same kind, namespace and name is kept.
        protected_flavors: names of ResourceFlavors never pruned (``window_flavors``), a list.

    Returns:
        The objects to delete, each ``{apiVersion, kind, metadata: {name, namespace}}`` (namespace
        only for namespaced objects), a list of dicts.
    """
    keep = {object_key(o) for o in wanted or []}
    out = []
    for obj in _listed(results):
        if object_key(obj) in keep or (obj["kind"] == "ResourceFlavor" and obj["metadata"]["name"] in protected_flavors):
            continue
        if obj["metadata"].get("deletionTimestamp"):
            continue
        out.append({"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                    "metadata": {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}})
    return out
