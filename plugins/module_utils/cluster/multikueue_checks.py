# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the multikueue role reads back from the clusters, as messages a person can act on:
clusters that did not answer before anything was applied, and MultiKueueClusters the
manager's Kueue could not connect to."""

from __future__ import annotations


def unreachable(results: list) -> list[str]:
    """One problem per cluster that did not answer the role's first read.

    Args:
        results: the results of a looped read (kubernetes.core.k8s_info with ``ignore_errors``),
            one per cluster; each ``item`` is a cluster of the manager's Plan (``name``, ``path``,
            ``kubeconfig``, ``context``).

    Returns:
        Each failing cluster's inventory path, the kubeconfig and the error, and the fix, a
        list of strings; empty when every cluster answered.
    """
    out = []
    for result in results or []:
        if not result.get("failed"):
            continue
        cluster = result["item"]
        error = " ".join(str(result.get("msg") or "no answer").split())
        context = ", context %r" % cluster["context"] if cluster.get("context") else ""
        values = (cluster["path"], cluster["name"], cluster["kubeconfig"], context, error[:300])
        out.append("%s.kubeconfig: cluster %s does not answer (got %r%s): %s. Nothing was applied. Check that the "
                   "kubeconfig exists on the controller and that its API server is up and reachable, or remove the "
                   "cluster from gpushare_multikueue" % values)
    return out


def inactive(resources: list, names: list) -> list[str]:
    """The MultiKueueClusters of ``names`` that are not Active, with Kueue's reason.

    Args:
        resources: the manager's MultiKueueClusters as read (kubernetes.core.k8s_info), a list.
        names: the worker clusters of the Plan, a list of strings.

    Returns:
        ``<name>: <reason>: <message>`` for each one missing or not Active, a list of strings.
    """
    found = {r["metadata"]["name"]: r for r in resources or []}
    out = []
    for name in names or []:
        conditions = ((found.get(name) or {}).get("status") or {}).get("conditions") or []
        active = next((c for c in conditions if c.get("type") == "Active"), None)
        if active is None:
            out.append("%s: no Active condition yet" % name)
        elif active.get("status") != "True":
            out.append("%s: %s: %s" % (name, active.get("reason", ""), active.get("message", "")))
    return out
