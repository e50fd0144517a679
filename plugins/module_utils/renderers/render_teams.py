# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan to what each team submits: ``teams/<team>.md`` and a ready manifest per workload,
``teams/<team>/<workload>.yaml``.

A manifest is the object its kind suggests: a Deployment for ``serving``, a Job for
``training`` and ``batch`` (created suspended; Kueue starts it on admission), one Pod per
replica for ``notebook`` (a notebook server is one pod per person, as JupyterHub makes
them). Each carries the team's namespace, the LocalQueue label, the team's
WorkloadPriorityClass label, production's PriorityClass in production's namespaces, the exact
GPU request (workload_requests: the one place it is decided) and a securityContext that
passes the namespace's Pod Security level. Nothing here is applied by the collection: these
are the teams' own objects (no managed-by label, so pruning never touches them).
"""

from __future__ import annotations

import re

try:
    import yaml
except ImportError:     # ansible-core depends on PyYAML; this only keeps `import` sanity quiet
    yaml = None

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.sharing_modes import MIG, MODES, SHARED_MODES, WHOLE
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.changes import by_team, restart_line
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.workload_requests import pod_requests
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.day_states import day_states

APP_LABEL = "app.kubernetes.io/name"
# What each workload kind becomes.
OBJECT_KINDS = {"serving": "Deployment", "training": "Job", "batch": "Job", "notebook": "Pod"}
# The container's securityContext per Pod Security level. Restricted: non-root, no privilege
# escalation, every capability dropped, the runtime's seccomp profile (kubernetes.io Pod
# Security Standards, "Restricted"). Baseline (images that start as root, e.g. Jupyter's
# docker-stacks): no privilege, the runtime's seccomp profile.
CONTAINER_SECURITY = {
    "restricted": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                   "seccompProfile": {"type": "RuntimeDefault"}},
    "baseline": {"privileged": False, "seccompProfile": {"type": "RuntimeDefault"}},
}
POD_SECURITY = {
    "restricted": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "baseline": {"seccompProfile": {"type": "RuntimeDefault"}},
}


def _object_name(workload: str, group: dict, groups: list[dict]) -> str:
    """The workload's name; with replicas asking for two MIG profiles, one object per profile."""
    if len(groups) == 1:
        return workload
    return "%s-%s" % (workload, group["profile"].replace(".", "-"))


def _pod_spec(plan: dict, name: str, req: dict, group: dict, namespace: dict) -> dict:
    level = namespace["pod_security"]
    resources: dict = {}
    spec: dict = {}
    if group["claim_template"]:
        resources["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": group["claim_template"]}]
    elif group["resource"]:
        resources["limits"] = {group["resource"]: group["count"]}
    container = {"name": name, "image": "registry.example.com/%s/%s:latest" % (req["team"], name),
                 "resources": resources, "securityContext": dict(CONTAINER_SECURITY[level])}
    spec = dict({"securityContext": dict(POD_SECURITY[level]), "containers": [container]}, **spec)
    pod_classes = namespace.get("priority_classes")
    if pod_classes is None:     # plans without the per-namespace list: production's namespaces only
        pc = plan["admission"]["production_priority_class"]
        pod_classes = [pc["name"]] if pc and namespace["production"] else []
    if pod_classes:
        spec["priorityClassName"] = pod_classes[0]
    return spec


def _labels(name: str, req: dict) -> dict:
    return {APP_LABEL: name, names.QUEUE_LABEL: req["queue"], names.WORKLOAD_PRIORITY_LABEL: req["priority_class"]}


def workload_objects(plan: dict, workload: str, req: dict) -> list[dict]:
    """The objects of one workload (one per group of replicas asking for the same thing)."""
    namespace = next(ns for ns in plan["admission"]["namespaces"] if ns["name"] == req["namespace"])
    kind = OBJECT_KINDS[req["kind"]]
    objects = []
    for group in req["groups"]:
        name = _object_name(workload, group, req["groups"])
        labels = _labels(name, req)
        meta = {"name": name, "namespace": req["namespace"], "labels": labels}
        count = len(group["replicas"])
        if kind == "Pod":
            for replica in group["replicas"]:
                # A spec of its own per Pod (made again, cheaper than a deep copy): PyYAML
                # would write one shared object as an anchor and aliases.
                objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": dict(
                    meta, name="%s-%d" % (name, replica), labels=dict(labels)),
                    "spec": _pod_spec(plan, name, req, group, namespace)})
            continue
        pod = _pod_spec(plan, name, req, group, namespace)
        template = {"metadata": {"labels": dict(labels)}, "spec": pod}
        if kind == "Deployment":
            spec = {"replicas": count, "selector": {"matchLabels": {APP_LABEL: name}}, "template": template}
            objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
        else:
            template["spec"] = dict(pod, restartPolicy="Never")
            # Created suspended, as Kueue's documentation asks: Kueue unsuspends it on admission.
            spec = {"parallelism": count, "completions": count, "suspend": True, "template": template}
            objects.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})
    return objects


def _asks(group: dict) -> str:
    if group["claim_template"]:
        return "ResourceClaimTemplate `%s`" % group["claim_template"]
    return "`%s: %d`" % (group["resource"], group["count"]) if group["resource"] else "no GPU (none advertised)"


class StateIndex:
    """One day state (day_states) indexed once, for what_it_gets: each lookup by key, so the
    team pages cost workloads plus GPUs, not workloads times GPUs (20,000 services on 8,000
    GPUs took minutes)."""

    def __init__(self, state: dict):
        self.advertised: dict[str, int] = {}
        self.slices: set = set()
        self.gpu_team: dict = {}
        for n in state["nodes"]:
            for resource, count in (n.get("advertised") or {}).items():
                self.advertised[resource] = self.advertised.get(resource, 0) + count
            for g in n["gpus"]:
                self.gpu_team.setdefault((n["name"], g["index"]), g["team"])
                if g["mode"] == MIG:
                    self.slices.update((n["name"], g["index"], s["profile"], s["start"], s["workload"], s["replica"])
                                       for s in g["mig"]["slices"])
        self.whole: dict[str, list] = {}            # workload -> [((node, index), use)], in the state's order
        for key, use in state["whole"].items():
            for name in dict.fromkeys(use["workloads"]):
                self.whole.setdefault(name, []).append((key, use))
        self.waiting: dict[str, list[str]] = {}     # workload -> its lines (each starts "<workload> ")
        for line in state["waiting"]:
            self.waiting.setdefault(line.split(" ", 1)[0], []).append(line)


def what_it_gets(plan: dict, workload: dict, req: dict, state: dict, index: StateIndex | None = None) -> str:
    """One cell: what ``workload`` gets in ``state`` (a day_states state; ``index``, its
    StateIndex, made here when not given)."""
    index = index or StateIndex(state)
    if workload["sharing"] == MIG:
        where = [(s, (s["node"], s["gpu"], s["profile"], s["start"], workload["name"], s["replica"]) in index.slices)
                 for s in workload["slices"]]
        runs = ["replica %d on %s GPU %d %s" % (s["replica"], s["node"], s["gpu"], s["profile"]) for s, ok in where if ok]
        ends = ["replica %d" % s["replica"] for s, ok in where if not ok]
        return "; ".join(runs + (["%s: no slice in this state, must have ended" % ", ".join(ends)] if ends else []))
    if workload["sharing"] == WHOLE:
        placed = ["%s GPU %d%s" % (node, gpu, " (borrowed from %s)" % (index.gpu_team[(node, gpu)] or "the cohort pool")
                                   if use["borrower"] else "")
                  for (node, gpu), use in index.whole.get(workload["name"], [])]
        waits = index.waiting.get(workload["name"], [])
        return "; ".join((["runs on " + ", ".join(placed)] if placed else []) + waits) or "not admitted in this state"
    if workload["sharing"] in SHARED_MODES:
        resource = req["groups"][0]["resource"]
        units = index.advertised.get(resource, 0)
        if not units:
            return "`%s` is not advertised: its pods must have ended, new ones wait" % resource
        return "%s `%s` (%d in the cluster)" % (MODES[workload["sharing"]].words, resource, units)
    if workload.get("profile"):
        return "a %s MIG slice the DRA driver makes for its ResourceClaim" % workload["profile"]
    return "a GPU allocated for its ResourceClaim on a DRA node"


def _state_title(state: dict) -> str:
    hours = ", ".join("%s-%s" % h for h in state["hours"]) or "all day"
    return ("window %s (%s)" % (state["window"], hours)) if state["window"] else "base state (%s)" % hours


def team_markdown(plan: dict, team: dict, requests: dict, changes: dict | None = None,
                  states: list[tuple[dict, StateIndex]] | None = None) -> str:
    """teams/<team>.md; ``states``: day_states' states with their StateIndex, made here when
    not given (team_files makes them once for every team)."""
    spaces = [ns for ns in plan["admission"]["namespaces"] if ns["team"] == team["name"]]
    states = states or [(s, StateIndex(s)) for s in day_states(plan)]
    mine = [w for w in plan["workloads"] if w["team"] == team["name"]]
    out = ["# Team %s: what to submit" % team["name"], ""]
    out += ["- Namespace%s: %s; Pod Security `%s` (the manifests' securityContext passes it)." % (
        "s" if len(spaces) > 1 else "", ", ".join("`%s`" % ns["name"] for ns in spaces), team["pod_security"])]
    out += ["- Every GPU pod carries `%s: %s` (the LocalQueue; without it the pod is refused) and may carry `%s`: %s."
            % (names.QUEUE_LABEL, team["local_queue"], names.WORKLOAD_PRIORITY_LABEL,
               ", ".join("`%s`" % c for c in spaces[0]["workload_priority_classes"]) if spaces else "none")]
    out += ["- Quota (ClusterQueue `%s`): %s; %s, %s." % (
        team["cluster_queue"], ", ".join("%d `%s`" % (n, k.split(" ", 1)[1]) for k, n in team["owns"].items()) or "none",
        "lends idle quota" if team["lend"] else "lends nothing", "may borrow" if team["borrow"] else "does not borrow")]
    out += ["", "## Workloads", "", "| workload | manifest | object | each pod asks for | pods |", "|---|---|---|---|---|"]
    for w in mine:
        req = requests[w["name"]]
        for group in req["groups"]:
            out.append("| %s | [`%s/%s.yaml`](%s/%s.yaml) | %s `%s` | %s | %d |" % (
                w["name"], team["name"], w["name"], team["name"], w["name"], OBJECT_KINDS[w["kind"]],
                _object_name(w["name"], group, req["groups"]), _asks(group), len(group["replicas"])))
    if not mine:
        out.append("| (none) | | | | |")
    out += ["", "## What each workload gets, state by state (times in %s)" % plan["cluster"]["timezone"], ""]
    out += ["| workload | %s |" % " | ".join(_state_title(s) for s, _index in states), "|---|%s" % ("---|" * len(states))]
    for w in mine:
        out.append("| %s | %s |" % (w["name"], " | ".join(what_it_gets(plan, w, requests[w["name"]], s, index)
                                                          for s, index in states)))
    pending = by_team(changes).get(team["name"]) if changes and changes.get("previous") else None
    if pending:
        out += ["", "## Changes for this team, not applied yet (changes.md)", ""]
        out += ["- restarts: %s" % restart_line(r)
                for r in pending["restarts"]]
        out += ["- starts: %s replica %d on %s" % (r["workload"], r["replica"], r["new"]) for r in pending["started"]]
        out += ["- ends: %s replica %d (was on %s)" % (r["workload"], r["replica"], r["old"]) for r in pending["ended"]]
    out += ["", "Replace each manifest's `image` with yours; the rest comes from the Plan.", ""]
    return "\n".join(out)


# A string that YAML writes on one line, whatever the column: no space, quote or control
# character, short enough for a simple key (PyYAML: under 128 with its 21-character tag). Whether it is plain or quoted ('true',
# '08:00', 'a:') is still PyYAML's decision (_scalar).
_ONE_LINE = re.compile(r"[A-Za-z0-9._/:@+=-]{1,100}\Z")


class _NotBlockYaml(Exception):
    """A document outside what _block_yaml writes: PyYAML writes it."""


# PyYAML's own pieces decide plain or quoted: its emitter's analysis and its resolver (a plain
# 'true' or '08:00' would read back as another type, so it is quoted).
_EMITTER = yaml.emitter.Emitter(None) if yaml else None
_RESOLVER = yaml.resolver.Resolver() if yaml else None
_STR = "tag:yaml.org,2002:str"
# Starts and ends with a letter or digit: PyYAML's analysis finds nothing in such a _ONE_LINE
# string that forbids the plain style (an indicator first, a ':' last, a '---' start).
_PLAIN_SHAPE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._/:@+=-]*[A-Za-z0-9])?\Z")


_STRINGS: dict[str, str] = {}      # string -> its YAML text, decided once per process


def _string(text: str) -> str:
    written = _STRINGS.get(text)
    if written is not None:
        return written
    if not _ONE_LINE.match(text):
        raise _NotBlockYaml(text)
    if _PLAIN_SHAPE.match(text):     # no indicator where the emitter's analysis looks for one
        plain = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR
    else:
        analysis = _EMITTER.analyze_scalar(text)
        if analysis.multiline or not analysis.allow_single_quoted:
            raise _NotBlockYaml(text)
        plain = analysis.allow_block_plain and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR
    written = text if plain else "'%s'" % text        # _ONE_LINE lets no quote in
    if len(_STRINGS) < 100000:
        _STRINGS[text] = written
    return written


def _scalar(value) -> str:
    if type(value) is str:  # pylint: disable=unidiomatic-typecheck  # a str subclass may dump otherwise
        return _string(value)
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if type(value) is int:  # pylint: disable=unidiomatic-typecheck  # not bool, not an int subclass
        return str(value)
    raise _NotBlockYaml(value)


def _mapping(mapping: dict, indent: int, out: list, lead: str | None = None) -> None:
    pad, known = " " * indent, _STRINGS
    for key, value in mapping.items():
        head = (lead or pad) + (known.get(key) or _scalar(key)) + ":"
        lead = None
        kind = type(value)
        if kind is str:
            out.append(head + " " + (known.get(value) or _string(value)))
        elif kind is dict and value:
            out.append(head)
            _mapping(value, indent + 2, out)
        elif kind is list and value:
            out.append(head)
            _sequence(value, indent, out)      # PyYAML: a mapping's sequence is not indented
        else:
            out.append(head + " " + _value(value))


def _sequence(items: list, indent: int, out: list) -> None:
    for value in items:
        lead = " " * indent + "- "
        if type(value) is dict and value:  # pylint: disable=unidiomatic-typecheck
            _mapping(value, indent + 2, out, lead)
        elif type(value) is list and value:  # pylint: disable=unidiomatic-typecheck
            raise _NotBlockYaml(value)
        else:
            out.append(lead + _value(value))


def _value(value) -> str:
    if type(value) in (dict, list):     # empty: PyYAML writes it in flow style
        return "{}" if isinstance(value, dict) else "[]"
    return _scalar(value)


def _block_yaml(documents: list) -> str:
    """yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)'s text for
    documents of mappings, lists, one-line strings, ints, booleans and nulls, written
    directly: PyYAML's representer cost a millisecond a manifest (20 s for 20,000)."""
    out: list[str] = []
    for number, document in enumerate(documents):
        if type(document) is not dict or not document:  # pylint: disable=unidiomatic-typecheck
            raise _NotBlockYaml(document)
        if number:
            out.append("---")
        _mapping(document, 0, out)
    return "\n".join(out) + "\n" if out else ""


def _dump_all(documents) -> str:
    documents = list(documents)
    try:
        return _block_yaml(documents)
    except _NotBlockYaml:
        return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)


def team_files(plan: dict, changes: dict | None = None) -> list[dict]:
    """[{path, content}] under the plan directory: teams/<team>.md, teams/<team>/<workload>.yaml."""
    requests = pod_requests(plan)
    states = [(s, StateIndex(s)) for s in day_states(plan)]
    by_team: dict[str, list[dict]] = {}
    for w in plan["workloads"]:
        by_team.setdefault(w["team"], []).append(w)
    files = []
    for team in plan["teams"]:
        files.append({"path": "teams/%s.md" % team["name"],
                      "content": team_markdown(plan, team, requests, changes, states)})
        for w in by_team.get(team["name"], []):
            head = ("# Team %s's %s (%s), from the plan of %s: replace the image; see teams/%s.md.\n"
                    % (team["name"], w["name"], w["kind"], plan["cluster"]["name"], team["name"]))
            files.append({"path": "teams/%s/%s.yaml" % (team["name"], w["name"]),
                          "content": head + _dump_all(workload_objects(plan, w["name"], requests[w["name"]]))})
    return files


__all__ = ["team_files", "team_markdown", "workload_objects", "what_it_gets"]
