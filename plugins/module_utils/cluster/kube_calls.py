# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GPU stack roles pass to and read from kubernetes.core: the connection settings
and which objects a batched apply changed."""

from __future__ import annotations


def k8s_auth(kubeconfig=None, context=None) -> dict:
    """The connection settings given (kubeconfig, context), empty ones left out.

    For the roles' ``module_defaults`` and for ``query('kubernetes.core.k8s', ..., **auth)`` (reads
    through the lookup run in the controller's process: no module start per read).

    Args:
        kubeconfig: path of the kubeconfig file; none or empty for the client's default.
        context: name of the kubeconfig context; none or empty for its current context.

    Returns:
        A dict with ``kubeconfig`` and ``context`` where given, ``{}`` when neither is.
    """
    given = {"kubeconfig": kubeconfig, "context": context}
    return {key: value for key, value in given.items() if value}


def changed_objects(result: dict) -> list:
    """Names of the objects a registered ``kubernetes.core.k8s`` result changed.

    Args:
        result: the registered result of one kubernetes.core.k8s task, for one definition (the
            object under ``result``) or a list of them (one result per object under
            ``result.results``).

    Returns:
        ``Kind/namespace/name`` of each changed object (namespace empty when cluster-scoped), a
        list of strings.
    """
    inner = result.get("result")
    results = inner["results"] if isinstance(inner, dict) and "results" in inner else [result]
    names = []
    for item in results:
        if item.get("changed"):
            obj = item.get("result") or {}
            meta = obj.get("metadata") or {}
            names.append("%s/%s/%s" % (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", "")))
    return names
