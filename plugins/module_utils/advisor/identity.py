# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload identity: which inventory workload each observed pod belongs to.

A workload's pods are recognised, in this order:

1. ``match`` selectors of ``gpushare_advise_match`` (workload name -> one selector or a list;
   a pod is the workload's when every key of one selector holds): ``namespace``,
   ``owner_kind`` (``<none>`` for a pod without a controller, such as JupyterHub's
   ``jupyter-<user>``), ``owner_name`` (the owner as kube-state-metrics names it, or its
   controller: the Deployment of a ReplicaSet, the CronJob of a Job), ``name_prefix``,
   ``name_pattern`` (a regular expression the whole pod name matches), ``labels`` (pod labels
   from ``kube_pod_labels``) and ``queue`` (the ``kueue.x-k8s.io/queue-name`` label). Without
   ``namespace`` a selector looks in the namespaces of the workload's team. A pod matched by
   two workloads, or a selector that matches no pod, is an error naming both.
2. For a workload without ``match``, its name (today's behaviour): the pods whose controller
   is named like it (``service_name``: a ReplicaSet without its pod-template hash, a Job
   without its run suffix, a StatefulSet ``<name>-<ordinal>``), else, in its team's
   namespaces, whose controller name starts with ``<name>-`` (per-run objects: Kubeflow's
   TrainJob/JobSet ``<name>-<id>-node-0``, PyTorchJob ``<name>-<id>``, RayJob clusters).
   The longest such name wins.
3. Pods that match no workload form groups by their controller; bare pods in one namespace
   named ``<prefix>-<x>`` (JupyterHub's ``jupyter-<user>``) form one group ``<prefix>``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import AdviceError

MATCH_KEYS = ("namespace", "owner_kind", "owner_name", "name_prefix", "name_pattern", "labels", "queue")
QUEUE_LABEL = names.QUEUE_LABEL
NO_OWNER = "<none>"
# Owner kinds whose objects are one per run: their name carries a run suffix.
RUN_KINDS = ("Job", "CronJob", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob",
             "JobSet", "RayJob", "RayCluster")

_REPLICASET_HASH = re.compile(r"-[a-z0-9]{6,10}$")
# A Job per run: CronJob's "-<minutes since the epoch>", or a run id that tools append
# ("-3fa8b2c1"); a last segment of 5-12 letters and digits with at least one digit.
_JOB_SUFFIX = re.compile(r"-(?=[a-z0-9]*[0-9])[a-z0-9]{5,12}$")
# KubeRay: a RayJob's cluster is "<rayjob>-raycluster-<5>".
_RAY_CLUSTER = re.compile(r"-raycluster-[a-z0-9]{5}$")
# A family of per-run objects numbered by hand or by a script: experiment-1, experiment-2, ...
_RUN_NUMBER = re.compile(r"(?<=[a-z0-9])-[0-9]+$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def service_name(owner_kind: str | None, owner_name: str | None, pod: str) -> str:
    """The controller a pod belongs to, by kube-state-metrics' owner: its Deployment
    (ReplicaSet name without the pod-template hash), StatefulSet, DaemonSet, or the object
    that runs it once per run (a Job without its CronJob suffix, a Kubeflow or Ray job without
    its run id). A pod without a controller keeps its name without hash-like suffixes."""
    if not owner_name or owner_kind in (None, "", NO_OWNER) or owner_name == NO_OWNER:
        return _REPLICASET_HASH.sub("", _REPLICASET_HASH.sub("", pod)) if pod.count("-") >= 2 else pod
    if owner_kind == "ReplicaSet":
        return _REPLICASET_HASH.sub("", owner_name)
    if owner_kind in RUN_KINDS:
        return _RUN_NUMBER.sub("", _JOB_SUFFIX.sub("", _RAY_CLUSTER.sub("", owner_name)))
    return owner_name


def label_key(name: str) -> str:
    """A Kubernetes label name as kube-state-metrics writes it in kube_pod_labels."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    owner_kind: str | None = None
    owner_name: str | None = None
    labels: tuple = ()            # ((kube_pod_labels key, value), ...)

    @property
    def controller(self) -> str:
        return service_name(self.owner_kind, self.owner_name, self.name)

    @property
    def bare(self) -> bool:
        return self.owner_kind in (None, "", NO_OWNER) or self.owner_name in (None, "", NO_OWNER)

    def text(self) -> str:
        owner = "no controller" if self.bare else "%s %s" % (self.owner_kind, self.owner_name)
        return "pod %s/%s (%s)" % (self.namespace, self.name, owner)


@dataclass(frozen=True)
class Selector:
    entry: str
    index: int
    raw: dict
    namespaces: tuple              # empty: the team's namespaces
    owner_kinds: tuple
    owner_names: tuple
    prefixes: tuple
    pattern: object                # compiled re, or None
    labels: tuple                  # ((kube_pod_labels key, value), ...)

    def matches(self, pod: Pod) -> bool:
        if pod.namespace not in self.namespaces:
            return False
        if self.owner_kinds and (NO_OWNER if pod.bare else pod.owner_kind) not in self.owner_kinds:
            return False
        if self.owner_names and pod.owner_name not in self.owner_names and pod.controller not in self.owner_names:
            return False
        if self.prefixes and not pod.name.startswith(self.prefixes):
            return False
        if self.pattern is not None and not self.pattern.fullmatch(pod.name):
            return False
        if self.labels:
            have = dict(pod.labels)
            if any(have.get(k) != v for k, v in self.labels):
                return False
        return True

    def text(self) -> str:
        return "gpushare_advise_match.%s%s %s" % (self.entry, "[%d]" % self.index if self.index >= 0 else "",
                                                  _flow(self.raw))

    @property
    def label_names(self) -> tuple:
        return tuple(k for k, _v in self.labels)


def _flow(d: dict) -> str:
    def one(v):
        if isinstance(v, dict):
            return "{%s}" % ", ".join("%s: %s" % (k, one(x)) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            return "[%s]" % ", ".join(one(x) for x in v)
        return str(v)
    return one(d)


def _strings(path: str, value, problems: list) -> tuple:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not values or \
            not all(isinstance(v, str) and v for v in values):
        problems.append("%s must be a non-empty string or a list of them (got %r)" % (path, value))
        return ()
    return tuple(values)


def parse_match(raw, workloads: list, team_namespaces: dict) -> dict:
    """``gpushare_advise_match`` (workload name -> selector or list of selectors) to
    {workload name: [Selector, ...]}; AdviceError naming every bad entry."""
    if raw in (None, {}, ""):
        return {}
    problems = []
    if not isinstance(raw, dict):
        raise AdviceError("gpushare_advise_match must map workload names to selectors, e.g. "
                          "{notebooks: {namespace: data-science, name_prefix: jupyter-}} (got %r)" % (raw,))
    by_name = {w.name: w for w in workloads}
    out = {}
    for name, value in raw.items():
        path = "gpushare_advise_match.%s" % name
        if name not in by_name:
            problems.append("%s: no workload %r in gpushare_workloads (workloads: %s)"
                            % (path, name, ", ".join(sorted(by_name)) or "none"))
            continue
        items = value if isinstance(value, list) else [value]
        if not items:
            problems.append("%s: an empty list matches no pod; give a selector such as {name_prefix: %s-}"
                            % (path, name))
            continue
        sels = []
        for i, item in enumerate(items):
            where = "%s[%d]" % (path, i) if isinstance(value, list) else path
            sel = _selector(name, i if isinstance(value, list) else -1, where, item,
                            team_namespaces.get(by_name[name].team, ()), problems)
            if sel is not None:
                sels.append(sel)
        out[name] = sels
    if problems:
        raise AdviceError("gpushare_advise_match is invalid:\n  - " + "\n  - ".join(problems))
    return out


def _selector(entry: str, index: int, path: str, item, team_ns: tuple, problems: list) -> Selector | None:
    if not isinstance(item, dict) or not item:
        problems.append("%s must be a mapping with at least one of %s (got %r)" % (path, ", ".join(MATCH_KEYS), item))
        return None
    unknown = sorted(set(item) - set(MATCH_KEYS))
    if unknown:
        problems.append("%s: unknown key%s %s; allowed: %s"
                        % (path, "s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(MATCH_KEYS)))
        return None
    before = len(problems)
    namespaces = _strings(path + ".namespace", item["namespace"], problems) if "namespace" in item else tuple(team_ns)
    kinds = _strings(path + ".owner_kind", item["owner_kind"], problems) if "owner_kind" in item else ()
    owners = _strings(path + ".owner_name", item["owner_name"], problems) if "owner_name" in item else ()
    prefixes = _strings(path + ".name_prefix", item["name_prefix"], problems) if "name_prefix" in item else ()
    pattern = None
    if "name_pattern" in item:
        if not isinstance(item["name_pattern"], str) or not item["name_pattern"]:
            problems.append("%s.name_pattern must be a regular expression (got %r)" % (path, item["name_pattern"]))
        else:
            try:
                pattern = re.compile(item["name_pattern"])
            except re.error as err:
                problems.append("%s.name_pattern %r is not a regular expression: %s" % (path, item["name_pattern"], err))
    labels = []
    if "labels" in item:
        if not isinstance(item["labels"], dict) or not item["labels"] or \
                not all(isinstance(k, str) and k and isinstance(v, (str, int, float, bool)) for k, v in item["labels"].items()):
            problems.append("%s.labels must map pod label names to values, e.g. {app: jupyterhub} (got %r)"
                            % (path, item["labels"]))
        else:
            labels += [(label_key(k), _label_value(v)) for k, v in item["labels"].items()]
    if "queue" in item:
        if not isinstance(item["queue"], str) or not item["queue"]:
            problems.append("%s.queue must name a Kueue LocalQueue (got %r)" % (path, item["queue"]))
        else:
            labels.append((label_key(QUEUE_LABEL), item["queue"]))
    if not namespaces and "namespace" not in item:
        problems.append("%s: the workload's team has no namespace; give namespace" % path)
    if len(problems) > before:
        return None
    return Selector(entry=entry, index=index, raw=dict(item), namespaces=namespaces, owner_kinds=kinds,
                    owner_names=owners, prefixes=prefixes, pattern=pattern, labels=tuple(labels))


def _label_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def selector_label_names(selectors: dict) -> set:
    """kube_pod_labels keys the selectors read (what must be on kube-state-metrics' allowlist)."""
    return {k for sels in selectors.values() for s in sels for k in s.label_names}


# --------------------------------------------------------------------------- assignment


@dataclass
class Identity:
    """Where each observed pod went: (namespace, pod) -> (service key, how)."""
    of: dict                       # (namespace, pod) -> (namespace, service name)
    how: dict                      # (namespace, pod) -> "match" | "name" | "name-prefix" | "unmatched"
    matched: dict                  # workload name -> sorted pod names (namespace/pod)
    unmatched: dict                # (namespace, group) -> sorted pod names
    notes: list
    collisions: set = frozenset()  # unmatched groups renamed <workload>-unmatched

    def service_of(self, namespace: str, pod: str) -> tuple:
        key = (namespace, pod)
        if key in self.of:
            return self.of[key]
        return (namespace, service_name(None, None, pod))


def assign(pods: list, workloads: list, selectors: dict, team_namespaces: dict) -> Identity:
    """Every pod to the workload it belongs to (see the module's docstring); AdviceError when
    a pod is matched by two workloads' selectors or a selector matches no pod."""
    default_entries = {w.name for w in workloads if w.name not in selectors}
    # per namespace, the workloads without selectors of the team owning it, longest name first
    by_namespace = defaultdict(list)
    for w in sorted(workloads, key=lambda w: (-len(w.name), w.name)):
        if w.name in default_entries:
            for ns in team_namespaces.get(w.team, ()):
                by_namespace[ns].append(w.name)
    of, how = {}, {}
    conflicts = []
    used = Counter()
    unmatched_pods = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        hits = [s for sels in selectors.values() for s in sels if s.matches(pod)]
        entries = sorted({s.entry for s in hits})
        for s in hits:
            used[(s.entry, s.index)] += 1
        if len(entries) > 1:
            conflicts.append("%s is matched by %s" % (pod.text(), " and by ".join(
                "%s (%s)" % (e, "; ".join(s.text() for s in hits if s.entry == e)) for e in entries)))
            continue
        key = (pod.namespace, pod.name)
        if entries:
            of[key], how[key] = (pod.namespace, entries[0]), "match"
            continue
        controller = pod.controller
        if controller in default_entries:
            of[key], how[key] = (pod.namespace, controller), "name"
            continue
        owner = pod.owner_name if not pod.bare else pod.name
        prefixed = next((n for n in by_namespace.get(pod.namespace, ())
                         if controller.startswith(n + "-") or owner.startswith(n + "-")), None)
        if prefixed:
            of[key], how[key] = (pod.namespace, prefixed), "name-prefix"
            continue
        unmatched_pods.append(pod)
    problems = list(conflicts)
    for entry, sels in sorted(selectors.items()):
        for s in sels:
            if not used[(s.entry, s.index)]:
                seen = sorted("%s (%s)" % (p.name, "no controller" if p.bare else "%s %s" % (p.owner_kind, p.owner_name))
                              for p in pods if p.namespace in s.namespaces)
                problems.append("%s matches no pod of the window (namespaces %s); pods seen there: %s"
                                % (s.text(), ", ".join(s.namespaces),
                                   ", ".join(seen[:8]) + (" ... (%d)" % len(seen) if len(seen) > 8 else "")
                                   if seen else "none"))
    if problems:
        raise AdviceError("workload identity (gpushare_advise_match):\n  - " + "\n  - ".join(problems))
    # A workload's pods in several namespaces are one service, in the namespace holding most of them.
    home = defaultdict(Counter)
    for (ns, _pod), (_ns, name) in of.items():
        home[name][ns] += 1
    main = {name: c.most_common(1)[0][0] for name, c in home.items()}
    of = {key: (main[name], name) for key, (_ns, name) in of.items()}
    names = {w.name for w in workloads}
    groups, collisions = _group_unmatched(unmatched_pods, names)
    unmatched = defaultdict(list)
    for pod in unmatched_pods:
        key = (pod.namespace, pod.name)
        of[key], how[key] = groups[key], "unmatched"
        unmatched[groups[key]].append("%s/%s" % key)
    matched = defaultdict(list)
    for (ns, pod), (_ns, name) in of.items():
        if how[(ns, pod)] != "unmatched":
            matched[name].append("%s/%s" % (ns, pod))
    return Identity(of=of, how=how, matched={k: sorted(v) for k, v in matched.items()},
                    unmatched={k: sorted(v) for k, v in unmatched.items()}, notes=[], collisions=collisions)


def _group_unmatched(pods: list, names: set) -> tuple:
    """(namespace, pod) -> (namespace, group): by controller; bare pods ``<prefix>-<x>`` of one
    namespace sharing a prefix (JupyterHub's ``jupyter-<user>``) as one group ``<prefix>``. A
    group named like a workload (whose selectors do not take it) is ``<name>-unmatched``; the
    set of those is returned too."""
    prefixes = Counter()
    collisions = set()
    for p in pods:
        if p.bare and "-" in p.name:
            prefixes[(p.namespace, p.name.rsplit("-", 1)[0])] += 1
    out = {}
    for p in pods:
        group = p.controller
        if p.bare and "-" in p.name and prefixes[(p.namespace, p.name.rsplit("-", 1)[0])] >= 2:
            group = p.name.rsplit("-", 1)[0]
        if group in names:
            group += "-unmatched"
            collisions.add(group)
        out[(p.namespace, p.name)] = (p.namespace, group)
    return out, collisions


def entry_name(group: str) -> str | None:
    """A workload name (a DNS label) for a group of unmatched pods, or None."""
    name = re.sub(r"[^a-z0-9-]", "-", group.lower()).strip("-")[:63].strip("-")
    return name if _DNS_LABEL.match(name or "") else None


def owner_groups(identity: Identity, owners: dict) -> dict:
    """(namespace, owner kind, owner name) -> the service most of its pods went to; a bare pod
    is its own group (namespace, "<none>", pod)."""
    votes = defaultdict(Counter)
    for (ns, pod), (kind, owner) in owners.items():
        bare = kind in (None, "", NO_OWNER) or owner in (None, "", NO_OWNER)
        group = (ns, NO_OWNER, pod) if bare else (ns, kind, owner)
        votes[group][identity.service_of(ns, pod)] += 1
    return {g: c.most_common(1)[0][0] for g, c in votes.items()}
