# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workload identity (identity.py): each selector key, the name defaults for the controllers
real clusters have (Deployments with real hash lengths, StatefulSets, CronJob, Kubeflow and Ray
runs), pods that match no workload, bad selectors; then the advisor on a history shaped like a
real cluster (usage_synth.real_cluster_day), with and without gpushare_advise_match, and the
reading of kube_pod_labels and pod counts from Prometheus answers."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest

import usage_synth
from inventories import example_day as example_inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import identity, usage as usage_mod
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import RangeSeries
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.settings import AdviceError
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

TEAMS = {"production": ("prod-serving",), "data-science": ("data-science",), "training": ("training",)}
WORKLOADS = [SimpleNamespace(name=n, team=t) for n, t in (
    ("vllm-chat", "production"), ("embeddings", "production"), ("notebooks", "data-science"),
    ("fine-tune", "training"), ("fine-tune-large", "training"))]


def _pod(ns, name, kind=None, owner=None, **labels):
    return identity.Pod(ns, name, kind, owner, tuple(sorted((identity.label_key(k), v) for k, v in labels.items())))


def _assign(pods, match=None):
    selectors = identity.parse_match(match, WORKLOADS, TEAMS)
    return identity.assign(pods, WORKLOADS, selectors, TEAMS)


def _where(ident, pod):
    return ident.of[(pod.namespace, pod.name)][1], ident.how[(pod.namespace, pod.name)]


# --------------------------------------------------------------------------- the name defaults


@pytest.mark.parametrize("pod, expected", [
    # Deployments: a pod-template hash of 10 characters (9 now and then) and a 5-character suffix
    (_pod("prod-serving", "vllm-chat-6c9f7d8b5d-x2k9p", "ReplicaSet", "vllm-chat-6c9f7d8b5d"), ("vllm-chat", "name")),
    (_pod("prod-serving", "vllm-chat-7f8d9c6b4-q7w3z", "ReplicaSet", "vllm-chat-7f8d9c6b4"), ("vllm-chat", "name")),
    # a StatefulSet's <name>-<ordinal>
    (_pod("data-science", "notebooks-3", "StatefulSet", "notebooks"), ("notebooks", "name")),
    # a CronJob's Job <cronjob>-<scheduled minute>, its pod <job>-<5>
    (_pod("training", "fine-tune-29863860-lphvt", "Job", "fine-tune-29863860"), ("fine-tune", "name")),
    # Kubeflow TrainJob: JobSet Job <trainjob>-node-0, pod <job>-0-<5>
    (_pod("training", "fine-tune-buk5d-node-0-0-k6bzz", "Job", "fine-tune-buk5d-node-0"), ("fine-tune", "name-prefix")),
    # Kubeflow PyTorchJob: no Job in between
    (_pod("training", "fine-tune-rerun-0944ee-master-0", "PyTorchJob", "fine-tune-rerun-0944ee"),
     ("fine-tune", "name-prefix")),
    # RayJob: its RayCluster <rayjob>-raycluster-<5>
    (_pod("training", "fine-tune-sweep-raycluster-k2x9z-head-8xq2z", "RayCluster", "fine-tune-sweep-raycluster-k2x9z"),
     ("fine-tune", "name-prefix")),
    # the longest workload name wins
    (_pod("training", "fine-tune-large-29863860-lphvt", "Job", "fine-tune-large-29863860"), ("fine-tune-large", "name")),
    (_pod("training", "fine-tune-large-x7k2p-node-0-0-abcde", "Job", "fine-tune-large-x7k2p-node-0"),
     ("fine-tune-large", "name-prefix")),
])
def test_name_defaults(pod, expected):
    assert _where(_assign([pod]), pod) == expected


def test_name_prefix_only_in_the_team_namespaces():
    """A controller named <workload>-... outside the workload's team is not the workload's."""
    pod = _pod("prod-serving", "fine-tune-demo-5c7d9f8b6q-t4k8m", "ReplicaSet", "fine-tune-demo-5c7d9f8b6q")
    assert _where(_assign([pod]), pod) == ("fine-tune-demo", "unmatched")


def test_jupyterhub_pods_without_a_selector_are_one_unmatched_group():
    pods = [_pod("data-science", "jupyter-%s" % u, "<none>", "<none>") for u in ("alice", "bob", "chen")]
    ident = _assign(pods + [_pod("data-science", "lonely", "<none>", "<none>")])
    assert {p.name: _where(ident, p) for p in pods} == {p.name: ("jupyter", "unmatched") for p in pods}
    assert ident.unmatched[("data-science", "jupyter")] == [
        "data-science/jupyter-alice", "data-science/jupyter-bob", "data-science/jupyter-chen"]
    assert ident.of[("data-science", "lonely")] == ("data-science", "lonely")


# --------------------------------------------------------------------------- each selector key


JUPYTER = _pod("data-science", "jupyter-alice", "<none>", "<none>", component="singleuser-server")
KUBEFLOW = _pod("data-science", "eve-gpu-0", "StatefulSet", "eve-gpu", **{"notebook-name": "eve-gpu"})
CRON = _pod("training", "nightly-29863860-lphvt", "Job", "nightly-29863860", **{"kueue.x-k8s.io/queue-name": "training"})
OTHER_NS = _pod("prod-serving", "jupyter-zed", "<none>", "<none>")
ALL = [JUPYTER, KUBEFLOW, CRON, OTHER_NS]


@pytest.mark.parametrize("selector, entry, hits", [
    ({"namespace": "data-science"}, "notebooks", {JUPYTER, KUBEFLOW}),
    ({"namespace": ["data-science", "prod-serving"], "name_prefix": "jupyter-"}, "notebooks", {JUPYTER, OTHER_NS}),
    ({"owner_kind": "<none>"}, "notebooks", {JUPYTER}),                      # the team's namespaces by default
    ({"owner_kind": ["StatefulSet", "<none>"]}, "notebooks", {JUPYTER, KUBEFLOW}),
    ({"owner_name": "eve-gpu"}, "notebooks", {KUBEFLOW}),
    ({"owner_name": "nightly"}, "fine-tune", {CRON}),                        # the CronJob, not the run's Job
    ({"owner_name": "nightly-29863860"}, "fine-tune", {CRON}),               # or the owner itself
    ({"name_prefix": ["jupyter-", "eve-"]}, "notebooks", {JUPYTER, KUBEFLOW}),
    ({"name_pattern": r"jupyter-[a-z]+"}, "notebooks", {JUPYTER}),
    ({"name_pattern": r"jupyter"}, "notebooks", set()),                       # the whole name must match
    ({"labels": {"component": "singleuser-server"}}, "notebooks", {JUPYTER}),
    ({"labels": {"notebook-name": "eve-gpu"}}, "notebooks", {KUBEFLOW}),
    ({"queue": "training"}, "fine-tune", {CRON}),
    ({"queue": "training", "owner_kind": "Job"}, "fine-tune", {CRON}),
    ({"queue": "training", "owner_kind": "PyTorchJob"}, "fine-tune", set()),  # every key must hold
])
def test_each_selector_key(selector, entry, hits):
    selectors = identity.parse_match({entry: selector}, WORKLOADS, TEAMS)
    got = {p for p in ALL if any(s.matches(p) for s in selectors[entry])}
    assert got == hits


def test_a_list_of_selectors_is_any_of_them():
    ident = _assign(ALL, {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"},
                                        {"labels": {"notebook-name": "eve-gpu"}}]})
    assert _where(ident, JUPYTER) == ("notebooks", "match") and _where(ident, KUBEFLOW) == ("notebooks", "match")
    assert ident.matched["notebooks"] == ["data-science/eve-gpu-0", "data-science/jupyter-alice"]


def test_a_selector_replaces_the_name_default_of_its_workload():
    """notebooks-0 of the old StatefulSet is not the notebooks' once they have a selector: it is
    reported as a group of its own (renamed, never proposed under the workload's name)."""
    old = _pod("data-science", "notebooks-0", "StatefulSet", "notebooks")
    ident = _assign([JUPYTER, old], {"notebooks": {"name_prefix": "jupyter-"}})
    assert _where(ident, old) == ("notebooks-unmatched", "unmatched")
    assert ident.collisions == {"notebooks-unmatched"}


def test_workload_pods_in_several_namespaces_are_one_service():
    pods = [_pod("data-science", "jupyter-a", "<none>", "<none>"), _pod("data-science", "jupyter-b", "<none>", "<none>"),
            _pod("prod-serving", "jupyter-c", "<none>", "<none>")]
    ident = _assign(pods, {"notebooks": {"namespace": ["data-science", "prod-serving"], "name_prefix": "jupyter-"}})
    assert {ident.of[(p.namespace, p.name)] for p in pods} == {("data-science", "notebooks")}


# --------------------------------------------------------------------------- bad input


def test_one_pod_matched_by_two_workloads_names_both_and_the_pod():
    with pytest.raises(AdviceError) as err:
        _assign(ALL, {"notebooks": {"namespace": "data-science"},
                      "fine-tune": {"namespace": "data-science", "owner_kind": "StatefulSet"}})
    msg = str(err.value)
    assert "pod data-science/eve-gpu-0 (StatefulSet eve-gpu) is matched by fine-tune" in msg
    assert "gpushare_advise_match.fine-tune {namespace: data-science, owner_kind: StatefulSet}" in msg
    assert "and by notebooks (gpushare_advise_match.notebooks {namespace: data-science})" in msg


def test_a_selector_that_matches_nothing_names_it_and_the_pods_seen():
    with pytest.raises(AdviceError) as err:
        _assign(ALL, {"notebooks": [{"name_prefix": "jupyter-"}, {"name_prefix": "jupyterhub-"}]})
    msg = str(err.value)
    assert "gpushare_advise_match.notebooks[1] {name_prefix: jupyterhub-} matches no pod of the window " \
           "(namespaces data-science); pods seen there: eve-gpu-0 (StatefulSet eve-gpu), jupyter-alice " \
           "(no controller)" in msg
    assert "notebooks[0]" not in msg


@pytest.mark.parametrize("match, expected", [
    ({"notebook": {"name_prefix": "jupyter-"}}, "gpushare_advise_match.notebook: no workload 'notebook' in "
                                                "gpushare_workloads"),
    ({"notebooks": {"prefix": "jupyter-"}}, "gpushare_advise_match.notebooks: unknown key prefix; allowed: namespace, "
                                            "owner_kind, owner_name, name_prefix, name_pattern, labels, queue"),
    ({"notebooks": {}}, "gpushare_advise_match.notebooks must be a mapping with at least one of"),
    ({"notebooks": []}, "gpushare_advise_match.notebooks: an empty list matches no pod"),
    ({"notebooks": {"name_pattern": "jupyter-("}}, "gpushare_advise_match.notebooks.name_pattern 'jupyter-(' is not a "
                                                   "regular expression"),
    ({"notebooks": {"labels": ["app"]}}, "gpushare_advise_match.notebooks.labels must map pod label names to values"),
    ({"notebooks": {"namespace": 3}}, "gpushare_advise_match.notebooks.namespace must be a non-empty string"),
    ({"notebooks": [{"queue": ""}]}, "gpushare_advise_match.notebooks[0].queue must name a Kueue LocalQueue"),
    (["notebooks"], "gpushare_advise_match must map workload names to selectors"),
])
def test_bad_selectors_are_named(match, expected):
    with pytest.raises(AdviceError, match="^") as err:
        identity.parse_match(match, WORKLOADS, TEAMS)
    assert expected in str(err.value)


# --------------------------------------------------------------------------- the advisor on a real-cluster-shaped history

MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


@pytest.fixture(scope="module")
def real():
    return usage_synth.real_cluster_day()


def test_without_selectors_the_jupyterhub_pods_are_reported_not_proposed(real):
    usage, truth = real
    out = ua.advise(usage, example_inventory())
    notebooks = _svc(out, "notebooks")
    assert notebooks["status"] == "no_data" and "jupyter (4 pods)" in notebooks["reason"]
    rows = {u["name"]: u for u in out["unmatched"]}
    assert set(rows) == {"jupyter", "eve-gpu"}
    assert rows["jupyter"]["pods"] == 4 and not rows["jupyter"]["proposed"]
    assert rows["jupyter"]["duplicates"] == "notebooks"
    assert rows["jupyter"]["suggested_match"] == {"notebooks": {"namespace": "data-science", "owner_kind": "<none>",
                                                                "name_prefix": "jupyter-"}}
    assert {w["name"] for w in out["proposal"]["workloads"]} == {w["name"] for w in example_inventory()["gpushare_workloads"]}
    assert out["plan_check"]["status"] == "accepted"
    gpu2 = out["proposal"]["nodes"]["gpu01"]["gpus"][2]
    assert (gpu2["mode"], gpu2["team"], gpu2["replicas"]) == ("timeslice", "data-science", 5)    # kept as it is
    del truth


def test_with_selectors_the_example_day_is_advised(real):
    usage, truth = real
    out = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH))
    got = {s["name"]: (s["status"], s.get("kind"), s.get("sharing")) for s in out["services"]}
    assert got == {"vllm-chat": ("ok", "serving", "whole"), "embeddings": ("ok", "serving", "mig"),
                   "classifier": ("ok", "serving", "mig"), "speech-to-text": ("ok", "serving", "mig"),
                   "notebooks": ("ok", "notebook", "timeslice"), "fine-tune": ("ok", "training", "whole")}
    notebooks = _svc(out, "notebooks")
    assert notebooks["replicas"] == truth["notebooks_up_at_once"] == 5
    assert notebooks["identity"]["rule"] == "match" and notebooks["identity"]["pods"] == len(truth["notebook_pods"])
    # each sharer's memory: what each user held plus its context (the generator's truth), read from
    # the device's series copied to every pod on it
    per_sharer = max(truth["per_sharer_mib"].values())
    assert notebooks["evidence"]["memory_peak_mib"] == pytest.approx(per_sharer, rel=0.01)
    assert notebooks["memory_need_mib"] == pytest.approx(per_sharer * 1.2, rel=0.01)
    (shared,) = notebooks["evidence"]["sharing"]
    assert shared["reporting"] == "duplicated" and shared["pods_max"] == 5
    fine = _svc(out, "fine-tune")
    assert (fine["gpus"], fine["identity"]["rule"]) == (2, "name-prefix")
    assert fine["identity"]["pods"] == len(truth["fine_tune_pods"])
    assert _svc(out, "vllm-chat")["identity"]["pods"] == len(truth["vllm_pods"])
    assert out["unmatched"] == [] and out["plan_check"]["status"] == "accepted"
    plan = build_plan(dict(example_inventory(), gpushare_workloads=out["proposal"]["workloads"],
                           gpushare_nodes=out["proposal"]["nodes"]))
    assert [g["mode"] for g in plan["nodes"][0]["gpus"]] == ["whole", "mig", "timeslice", "whole"]
    assert [w["name"] for w in plan["windows"]] == ["night"]


def test_selectors_by_queue_label_and_owner(real):
    usage, truth = real
    match = dict(MATCH, **{"fine-tune": {"queue": "training"}})
    out = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=match), check=False)
    fine = _svc(out, "fine-tune")
    assert fine["identity"]["rule"] == "match" and fine["identity"]["pods"] == len(truth["fine_tune_pods"])
    assert fine["status"] == "ok" and fine["gpus"] == 2


def test_bad_selectors_stop_the_advice(real):
    usage, _truth = real
    with pytest.raises(AdviceError, match="pod data-science/eve-gpu-0 .* is matched by"):
        ua.advise(usage, dict(example_inventory(), gpushare_advise_match={
            "notebooks": {"namespace": "data-science"},
            "fine-tune": {"namespace": "data-science", "owner_kind": "StatefulSet"}}))
    with pytest.raises(AdviceError, match=r"gpushare_advise_match.notebooks \{name_prefix: jupyterhub-\} matches no pod"):
        ua.advise(usage, dict(example_inventory(), gpushare_advise_match={"notebooks": {"name_prefix": "jupyterhub-"}}))


def test_match_label_names_are_what_kube_state_metrics_must_export():
    variables = dict(example_inventory(), gpushare_advise_match=dict(MATCH, **{"fine-tune": {"queue": "training"}}))
    assert ua.match_label_names(variables) == ("label_kueue_x_k8s_io_queue_name", "label_notebook_name")
    assert ua.match_label_names(example_inventory()) == ()


# --------------------------------------------------------------------------- reading Prometheus


class FakePrometheus:
    """Answers the queries of usage._labels and usage._pods_running from canned series."""

    def __init__(self, labels: list, owners: list):
        self.url = "http://prometheus.test"
        self.labels = labels          # [{metric labels}]
        self.owners = owners          # [(namespace, pod, kind, owner, [values])]
        self.queries = []

    def query(self, q, _t):
        self.queries.append(q)
        if q.startswith("count(last_over_time(kube_pod_labels{"):
            key = q.split("{", 1)[1].split("!=", 1)[0]
            return [{"value": [0, "1"]}] if any(key in m for m in self.labels) else []
        if q.startswith("max by (namespace, pod, label_"):
            return [{"metric": m, "value": [0, "1"]} for m in self.labels]
        raise AssertionError(q)

    def query_range_arrays(self, q, start, _end, step):
        """kube_pod_status_phase{phase="Running"}: one series per pod, 1 where the pod runs and 0
        where it is listed but not running; a count by owner (or by pod for bare pods) of
        kube_pod_owner, as Prometheus answers those queries."""
        self.queries.append(q)

        def times(values):
            return start + np.arange(len(values)) * step

        out = []
        if q.startswith("kube_pod_status_phase{"):
            for ns, pod, _kind, _owner, values in self.owners:
                if ('namespace="%s"' % ns) in q:
                    out.append(RangeSeries({"namespace": ns, "pod": pod, "phase": "Running"}, times(values),
                                           np.asarray(values, dtype=float)))
            return out
        bare = 'owner_kind="<none>"' in q
        for ns, pod, kind, owner, values in self.owners:
            if ('namespace="%s"' % ns) not in q or (kind == "<none>") != bare:
                continue
            metric = {"namespace": ns, "pod": pod} if bare else {"namespace": ns, "owner_kind": kind, "owner_name": owner}
            listed = np.ones(len(values))    # kube_pod_owner lists the pod all along, running or not
            out.append(RangeSeries(metric, times(values), listed))
        return out


def _grid(steps=3):
    return usage_mod._Grid(start=0.0, end=600.0, step=300, steps=steps, window="28d")   # pylint: disable=protected-access


def test_pod_labels_are_read_for_the_selectors():
    client = FakePrometheus([{"namespace": "training", "pod": "a", "label_kueue_x_k8s_io_queue_name": "training"},
                             {"namespace": "training", "pod": "b"}], [])
    got = usage_mod._labels(client, _grid(), ["training"], ("label_kueue_x_k8s_io_queue_name",))  # pylint: disable=protected-access
    assert got == {("training", "a"): (("label_kueue_x_k8s_io_queue_name", "training"),), ("training", "b"): ()}
    assert 'kube_pod_labels{namespace=~"training"}' in client.queries[-1]


def test_a_label_kube_state_metrics_does_not_export_names_its_allowlist():
    client = FakePrometheus([{"namespace": "training", "pod": "a"}], [])
    with pytest.raises(AdviceError) as err:
        usage_mod._labels(client, _grid(), ["training"], ("label_notebook_name",))  # pylint: disable=protected-access
    assert "has no kube_pod_labels series with label_notebook_name" in str(err.value)
    assert "metricLabelsAllowlist" in str(err.value) and "pods=[" in str(err.value)


def test_pods_are_counted_per_owner_and_bare_pods_one_by_one():
    client = FakePrometheus([], [("data-science", "jupyter-a", "<none>", "<none>", [1, 1, 0]),
                                 ("data-science", "jupyter-b", "<none>", "<none>", [0, 1, 1]),
                                 ("data-science", "hub-x", "ReplicaSet", "hub-5c7d9f8b6q", [1, 1, 1])])
    owners = {("data-science", pod): (kind, owner) for _ns, pod, kind, owner, _v in client.owners}
    got = usage_mod._pods_running(client, _grid(), ["data-science"], True, owners)  # pylint: disable=protected-access
    assert {k: v.full(3).tolist() for k, v in got.items()} == {
        ("data-science", "<none>", "jupyter-a"): [1, 1, 0], ("data-science", "<none>", "jupyter-b"): [0, 1, 1],
        ("data-science", "ReplicaSet", "hub-5c7d9f8b6q"): [1, 1, 1]}
    assert all('phase="Running"' in q for q in client.queries)
    client.queries.clear()
    listed = usage_mod._pods_running(client, _grid(), ["data-science"], False, owners)  # pylint: disable=protected-access
    assert not any("kube_pod_status_phase" in q for q in client.queries)
    # Without the phase metric a pod counts while kube-state-metrics lists it, running or not.
    assert {k: v.full(3).tolist() for k, v in listed.items()} == {
        ("data-science", "<none>", "jupyter-a"): [1, 1, 1], ("data-science", "<none>", "jupyter-b"): [1, 1, 1],
        ("data-science", "ReplicaSet", "hub-5c7d9f8b6q"): [1, 1, 1]}


def test_pods_of_one_owner_add_up_and_a_pod_kube_state_metrics_does_not_list_is_left_out():
    client = FakePrometheus([], [("serving", "llm-7d-a", "ReplicaSet", "llm-7d", [1, 1, 0]),
                                 ("serving", "llm-7d-b", "ReplicaSet", "llm-7d", [0, 1, 1]),
                                 ("serving", "stray", "ReplicaSet", "other", [1, 1, 1])])
    owners = {("serving", "llm-7d-a"): ("ReplicaSet", "llm-7d"), ("serving", "llm-7d-b"): ("ReplicaSet", "llm-7d")}
    got = usage_mod._pods_running(client, _grid(), ["serving"], True, owners)  # pylint: disable=protected-access
    assert {k: v.full(3).tolist() for k, v in got.items()} == {("serving", "ReplicaSet", "llm-7d"): [1, 2, 1]}


def test_owner_groups_follow_the_pods_identity():
    owners = {("data-science", "jupyter-a"): ("<none>", "<none>"), ("training", "ft-1-x"): ("Job", "fine-tune-29400000")}
    ident = identity.Identity(of={("data-science", "jupyter-a"): ("data-science", "notebooks"),
                                  ("training", "ft-1-x"): ("training", "fine-tune")}, how={}, matched={},
                              unmatched={}, notes=[])
    assert identity.owner_groups(ident, owners) == {("data-science", "<none>", "jupyter-a"): ("data-science", "notebooks"),
                                                    ("training", "Job", "fine-tune-29400000"): ("training", "fine-tune")}


def test_pods_that_duplicate_no_workload_are_proposed_as_a_new_one(real):
    """A Deployment nobody put in the inventory (a reranker on a free MIG slice of production's
    GPU 1) duplicates no workload: it is proposed as a new entry and planned with the rest."""
    usage, _truth = real
    usage = copy.deepcopy(usage)
    b = usage_synth.Builder(days=28)
    pod = "reranker-7c9d5f8b6q-z2x4c"
    usage.owners[("prod-serving", pod)] = ("ReplicaSet", "reranker-7c9d5f8b6q")
    usage.pods_running[("prod-serving", "ReplicaSet", "reranker-7c9d5f8b6q")] = ua.PodCounts.of(np.ones(usage.steps))
    usage.series.append(usage_mod.GpuSeries(node="gpu01", gpu=1, uuid="", instance="5", profile="1g.18gb",
                                            model="h200-141gb", namespace="prod-serving", pod=pod,
                                            fb_used=np.full(usage.steps, 3000.0) + b.noise(5),
                                            active=np.clip(0.05 + b.noise(0.01), 0, 1)))
    out = ua.advise(usage, dict(example_inventory(), gpushare_advise_match=MATCH))
    reranker = _svc(out, "reranker")
    assert (reranker["status"], reranker.get("new"), reranker["sharing"], reranker["mig_profile"]) == \
        ("ok", True, "mig", "1g.18gb")
    (row,) = out["unmatched"]
    assert row["name"] == "reranker" and row["proposed"] and row["reason"] == "proposed as a new workload"
    entry = next(w for w in out["proposal"]["workloads"] if w["name"] == "reranker")
    assert (entry["team"], entry["sharing"], entry["mig_profile"]) == ("production", "mig", "1g.18gb")
    assert out["plan_check"]["status"] == "accepted"
