# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The clusters of a MultiKueue inventory: ``gpushare_multikueue`` read into typed, frozen
objects, every problem named with its inventory path, the bad value and the fix.

One inventory describes every cluster. Each worker cluster is an inventory group whose
hosts are its GPU servers and whose variables (``group_vars/<group>/``, else
``group_vars/all/``) are that cluster's ``gpushare_teams``, ``gpushare_workloads`` and
``gpushare_policy``: the same inventory site.yml reads for one cluster, as a group. The
manager has no GPU servers; its teams are ``gpushare_teams`` of the play (group ``all``).
Kueue's manager cannot be its own worker (Kueue docs concepts/multikueue.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import Problems
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import (
    DNS_LABEL, Policy, Team, _Reader, _read_policy, read_teams)

PATH = "gpushare_multikueue"
# A Go duration as Kueue's Configuration reads multiKueue.workerLostTimeout (metav1.Duration).
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$")
CLUSTER_KEYS = ("name", "kubeconfig", "context", "server")
WORKER_KEYS = CLUSTER_KEYS + ("group",)


@dataclass(frozen=True)
class Cluster:
    """One cluster: its MultiKueue name, the admin kubeconfig the roles apply with (on the
    controller), its context, the API address the manager's Kueue uses (None: the
    kubeconfig's) and, for a worker, the inventory group of its GPU servers."""
    name: str
    kubeconfig: str
    context: str | None
    server: str | None
    group: str | None
    path: str

    def as_dict(self) -> dict:
        return {"name": self.name, "kubeconfig": self.kubeconfig, "context": self.context, "server": self.server,
                "group": self.group, "path": self.path}


@dataclass(frozen=True)
class MultiKueue:
    manager: Cluster
    workers: tuple[Cluster, ...]
    teams: tuple[Team, ...]
    policy: Policy
    worker_lost_timeout: str | None


def load_clusters(variables: dict, groups: dict) -> MultiKueue:
    """``gpushare_multikueue`` and the manager's ``gpushare_teams`` from ``variables``;
    ``groups`` is Ansible's group name -> host names. Raises PlanInvalid with every problem."""
    problems = Problems()
    r = _Reader(problems, PATH, variables.get(PATH), ("manager", "workers", "worker_lost_timeout"),
                required=("manager", "workers"))
    teams = read_teams(problems, variables.get("gpushare_teams"))
    policy = _read_policy(problems, variables.get("gpushare_policy"))
    manager = _cluster(problems, r.at("manager"), r.raw("manager"), CLUSTER_KEYS, groups) if r.given("manager") else None
    workers = []
    listed = r.raw("workers")
    if listed is not None and (not isinstance(listed, list) or not listed):
        problems.add(r.at("workers"), "must be a list of at least one worker cluster", listed,
                     "entries with name, group and kubeconfig", "See multikueue-examples/two-sites")
        listed = []
    for i, item in enumerate(listed or []):
        worker = _cluster(problems, "%s[%d]" % (r.at("workers"), i), item, WORKER_KEYS, groups)
        if worker:
            workers.append(worker)
    _check_unique(problems, manager, workers)
    timeout = r.string("worker_lost_timeout", None, DURATION, "a duration such as 15m, 90s or 1h30m")
    problems.raise_if_any()
    return MultiKueue(manager=manager, workers=tuple(workers), teams=tuple(teams), policy=policy,
                      worker_lost_timeout=timeout)


def _cluster(problems: Problems, path: str, value, keys: tuple[str, ...], groups: dict) -> Cluster | None:
    worker = "group" in keys
    r = _Reader(problems, path, value, keys, required=("name", "kubeconfig") + (("group",) if worker else ()))
    if not r.ok:
        return None
    name = r.string("name", pattern=DNS_LABEL, what="cluster name (a DNS label)")
    kubeconfig = r.string("kubeconfig", what="the path of the cluster's admin kubeconfig on the controller")
    server = r.string("server", what="the API address the manager reaches, https://host:port")
    if server and not server.startswith("https://"):
        problems.add(r.at("server"), "must be an https:// address", server, "https://host:port",
                     "Kueue refuses insecure kubeconfigs (Kueue docs setup_multikueue.md)")
    group = r.string("group", what="an inventory group") if worker else None
    if group and not (groups.get(group) or []):
        known = sorted(g for g, hosts in groups.items() if hosts and g not in ("all", "ungrouped"))
        problems.add(r.at("group"), "is no inventory group with hosts", group, ", ".join(known) or "a group of GPU servers",
                     "Put the cluster's GPU servers in this group (each with a gpushare_node), or name its group")
    if not (name and kubeconfig):
        return None
    return Cluster(name=name, kubeconfig=kubeconfig, context=r.string("context"), server=server, group=group, path=path)


def _check_unique(problems: Problems, manager: Cluster | None, workers: list[Cluster]) -> None:
    """A cluster is one name, one group and one kubeconfig (and context): the same cluster
    under two names would get each job twice."""
    first: dict[str, Cluster] = {}
    by_group: dict[str, Cluster] = {}
    by_access: dict[tuple, Cluster] = {}
    for worker in workers:
        seen = first.setdefault(worker.name, worker)
        if seen is not worker:
            problems.add(worker.path + ".name", "cluster %s is listed twice (also %s)" % (worker.name, seen.path),
                         worker.name, "each worker cluster once",
                         "Remove one of the entries, or give this cluster a name of its own")
            continue
        same = by_access.setdefault((worker.kubeconfig, worker.context), worker)
        if same is not worker:
            problems.add(worker.path + ".kubeconfig", "is the cluster %s again (%s has the same kubeconfig and context)"
                         % (same.name, same.path), worker.kubeconfig, "each worker cluster once",
                         "Remove one of the entries, or point it at the other cluster's kubeconfig")
        if worker.group:
            other = by_group.setdefault(worker.group, worker)
            if other is not worker:
                problems.add(worker.path + ".group", "group %s is already the GPU servers of %s (%s)"
                             % (worker.group, other.name, other.path), worker.group, "one group per worker cluster",
                             "A server belongs to one cluster: give this worker its own group")
    if not manager:
        return
    worker = first.get(manager.name) or by_access.get((manager.kubeconfig, manager.context))
    if worker:
        problems.add(manager.path + (".name" if worker.name == manager.name else ".kubeconfig"),
                     "the manager is also a worker (%s)" % worker.path,
                     manager.name if worker.name == manager.name else manager.kubeconfig,
                     "a cluster that is not in %s.workers" % PATH,
                     "Kueue's manager cannot be its own worker (Kueue docs concepts/multikueue.md): run the "
                     "manager as a cluster of its own, or remove it from the workers")
