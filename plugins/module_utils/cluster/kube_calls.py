# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GPU stack roles pass to the cluster clients (the connection settings) and how a
write is judged (which objects it changed)."""

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


# Bookkeeping the API server may rewrite on an apply that changes nothing the object says.
_BOOKKEEPING = frozenset(("managedFields", "resourceVersion", "generation"))


def object_name(obj: dict) -> str:
    """``Kind/namespace/name`` of an object (namespace empty when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    return "%s/%s/%s" % (obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))


def says_the_same(before: dict, after: dict) -> bool:
    """Whether an object read before a write and the object the write returned say the same.

    Left out: ``metadata.managedFields``, ``resourceVersion`` and ``generation`` (the API server
    re-sorts and re-times the managed fields on the first server-side apply after a controller
    wrote the status subresource, as Kueue and the admission-policy type checker do), ``status``
    (controllers write it, not the apply), and a quantity stored as ``"1"`` re-applied as ``1``
    (Kueue's webhook returns a created ClusterQueue's quotas as strings).
    """
    return _content(before) == _content(after)


def _content(value, top: bool = True):
    """An object without bookkeeping or status, scalars by their text (1 and "1" are one quantity)."""
    if isinstance(value, dict):
        out = {k: _content(v, False) for k, v in value.items() if not (top and k == "status")}
        if top and isinstance(value.get("metadata"), dict):
            out["metadata"] = {k: v for k, v in out["metadata"].items() if k not in _BOOKKEEPING}
        return out
    if isinstance(value, list):
        return [_content(v, False) for v in value]
    return value if value is None or isinstance(value, bool) else str(value)
