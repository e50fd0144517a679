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


# Bookkeeping the API server may rewrite on an apply that changes nothing the object says.
_BOOKKEEPING = frozenset(("managedFields", "resourceVersion", "generation"))


def changed_objects(result: dict) -> list:
    """Names of the objects a registered ``kubernetes.core.k8s`` result changed.

    With the diff (the task run with ``diff: true``), an object changed only when what it says
    changed. Left out: a diff in ``metadata.managedFields``, ``resourceVersion`` or
    ``generation`` alone (the API server re-sorts and re-times the managed fields on the first
    server-side apply after a controller wrote the status subresource, as Kueue and the
    admission-policy type checker do), and a quantity stored as ``"1"`` re-applied as ``1``
    (Kueue's webhook returns a created ClusterQueue's quotas as strings).

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
        if item.get("changed") and not _says_the_same(item.get("diff")):
            obj = item.get("result") or {}
            meta = obj.get("metadata") or {}
            names.append("%s/%s/%s" % (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", "")))
    return names


def _says_the_same(diff) -> bool:
    if not diff:
        return False  # no diff asked for: the module's word stands
    return _content(diff.get("before")) == _content(diff.get("after"))


def _content(value, top: bool = True):
    """The diff side without bookkeeping, scalars by their text (1 and "1" are one quantity)."""
    if isinstance(value, dict):
        out = {k: _content(v, False) for k, v in value.items()}
        if top and isinstance(value.get("metadata"), dict):
            out["metadata"] = {k: v for k, v in out["metadata"].items() if k not in _BOOKKEEPING}
            if not out["metadata"]:
                del out["metadata"]
        return out
    if isinstance(value, list):
        return [_content(v, False) for v in value]
    return value if value is None or isinstance(value, bool) else str(value)
