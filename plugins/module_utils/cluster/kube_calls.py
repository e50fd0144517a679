# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GPU stack roles pass to and read from kubernetes.core: the connection settings
and which objects a batched apply changed."""

from __future__ import annotations


def k8s_auth(kubeconfig=None, context=None) -> dict:
    """The connection settings given (kubeconfig, context), empty ones left out, for the roles'
    ``module_defaults`` and for ``query('kubernetes.core.k8s', ..., **auth)`` (reads through the
    lookup run in the controller's process: no module start per read)."""
    given = {"kubeconfig": kubeconfig, "context": context}
    return {key: value for key, value in given.items() if value}


def changed_objects(result: dict) -> list:
    """Names ("Kind/namespace/name", namespace empty when cluster-scoped) of the objects a
    registered ``kubernetes.core.k8s`` result changed, for one definition or a list of them."""
    inner = result.get("result")
    results = inner["results"] if isinstance(inner, dict) and "results" in inner else [result]
    names = []
    for item in results:
        if item.get("changed"):
            obj = item.get("result") or {}
            meta = obj.get("metadata") or {}
            names.append("%s/%s/%s" % (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", "")))
    return names
