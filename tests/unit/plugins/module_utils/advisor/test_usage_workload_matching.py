# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods the usage advisor counts as which workload, and its report of workloads seen in no
pod and of pods that match no workload, each field worked out by hand from the inputs
(usage_synth's histories, the example inventory).
"""

from __future__ import annotations

import numpy as np

import usage_synth
from inventories import example_day as example_inventory
from usage_cases import GIB, VLLM_POD, advice_of, hourly_history, hours_up, speech_of, vllm_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage as usage_module


def test_each_service_carries_the_inventorys_entry_and_its_halves():
    speech = speech_of(advice_of(usage_synth.example_day(change_after_day=14)))
    # As in workloads.yml (replicas 1 and gpus 1 where it says none); speech-to-text's halves, kind and status first, no empty field.
    assert speech["status"] == "unstable"
    assert all(h.split()[:3] == ["serving", "ok", "mig"] and "None" not in h for h in speech["halves"]), speech["halves"]
    declared = {s["name"]: s["declared"] for s in advice_of(usage_synth.example_day(days=14))["services"]}
    assert declared["notebooks"] == {"kind": "notebook", "sharing": "timeslice", "replicas": 5, "gpus": 1}
    assert declared["fine-tune"] == {"kind": "training", "sharing": "whole", "replicas": 1, "gpus": 2, "memory_gib": 240}


def test_a_service_in_another_teams_namespace_is_noted_and_one_in_no_teams_is_reported():
    inventory = example_inventory()
    for w in inventory["gpushare_workloads"]:
        if w["name"] == "vllm-chat":
            w["team"] = "data-science"       # its pods run in prod-serving, production's namespace
    assert advice_of(usage_synth.example_day(days=14), inventory)["notes"] == \
        ["service vllm-chat runs in namespace prod-serving (team production) but the inventory gives it to team "
         "data-science"]
    usage = usage_synth.example_day(days=14)
    for s in usage.series:
        if s.namespace == "training":
            s.namespace = "somebody-else"
    stray = [s for s in advice_of(usage)["services"] if s["namespace"] == "somebody-else"]
    assert stray and {(s["status"], s["reason"]) for s in stray} == \
        {("unknown_namespace", "namespace somebody-else belongs to no team of gpushare_teams")}


def test_a_row_of_pods_that_match_no_workload_names_their_namespace():
    # real_cluster_day's JupyterHub runs its users' pods in data-science, under no workload's name.
    usage, _truth = usage_synth.real_cluster_day()
    rows = {u["name"]: u for u in advice_of(usage)["unmatched"]}
    assert rows["jupyter"]["namespace"] == "data-science"


def _by_name(advice: dict) -> dict:
    return {(s["name"], s.get("namespace")): s for s in advice["services"]}


def _real():
    """real_cluster_day without gpushare_advise_match: JupyterHub's bare jupyter-<user> pods
    and Kubeflow's eve-gpu-0 (StatefulSet eve-gpu) match no workload of data-science."""
    usage, _truth = usage_synth.real_cluster_day()
    return usage, ua.advise(usage, example_inventory(), check=False)


def _check_a_workload_seen_in_no_pod_is_reported_with_its_entry_and_the_teams_strays(real):
    _usage, advice = real
    notebooks = _by_name(advice)[("notebooks", None)]
    # workloads.yml's notebooks entry (replicas 5, timeslice, the default gpus 1); no selector, so
    # the name rule; the two groups of data-science pods that match no workload, sorted by name.
    assert notebooks == {
        "name": "notebooks", "team": "data-science", "namespace": None,
        "declared": {"kind": "notebook", "sharing": "timeslice", "replicas": 5, "gpus": 1},
        "status": "no_data",
        "reason": "not seen in the GPU metrics: no pod's controller is named notebooks or notebooks-... in the "
                  "namespaces of team data-science; pods of team data-science that match no workload: "
                  "eve-gpu (1 pods), jupyter (4 pods) (see 'Pods that match no workload'; gpushare_advise_match "
                  "says which are notebooks's); the current entry is kept",
        "identity": {"rule": "name", "pods": 0}}


def _check_pods_that_match_no_workload_are_rows_with_their_pods_owners_and_reason(real):
    usage, advice = real
    rows = {r["name"]: r for r in advice["unmatched"]}
    assert sorted(rows) == ["eve-gpu", "jupyter"]
    jupyter_pods = sorted(p for (ns, p) in usage.owners if p.startswith("jupyter-"))
    assert len(jupyter_pods) == 4
    # jupyter-<user>: bare pods (owner "<none>"), a notebook like the no-data notebooks of its team:
    # suggested as a namespace, no owner and the name prefix.
    suggested = {"notebooks": {"namespace": "data-science", "owner_kind": "<none>", "name_prefix": "jupyter-"}}
    assert rows["jupyter"] == {
        "name": "jupyter", "namespace": "data-science", "team": "data-science", "status": "unmatched",
        "pods": 4, "examples": jupyter_pods, "owners": ["<none> <none>"], "proposed": False,
        "duplicates": "notebooks", "suggested_match": suggested,
        "reason": "its pods match no workload and look like notebooks's (team data-science, kind notebook, no pod "
                  "matched): not proposed as a new entry; to count them as notebooks add to gpushare_advise_match: "
                  "{notebooks: {namespace: data-science, owner_kind: <none>, name_prefix: jupyter-}}"}
    eve = dict(rows["eve-gpu"])
    # eve-gpu runs as a notebook in one half and a training in the other: unstable, its own reason.
    assert eve.pop("reason").startswith("the choice differs between the two halves of the window (")
    assert eve == {"name": "eve-gpu", "namespace": "data-science", "team": "data-science", "status": "unstable",
                   "pods": 1, "examples": ["eve-gpu-0"], "owners": ["StatefulSet eve-gpu"], "proposed": False,
                   "duplicates": None, "suggested_match": None}
    # The two share GPU time: each names the other.
    services = _by_name(advice)
    assert services[("jupyter", "data-science")]["shared_with"] == ["eve-gpu"]
    assert services[("eve-gpu", "data-science")]["shared_with"] == ["jupyter"]


def _check_a_services_identity_names_its_rule_first_five_pods_and_owners(real):
    usage, advice = real
    services = _by_name(advice)
    vllm_pods = sorted(p for (ns, p) in usage.owners if ns == "prod-serving" and p.startswith("vllm-chat-"))
    assert services[("vllm-chat", "prod-serving")]["identity"] == {
        "rule": "name", "pods": len(vllm_pods), "examples": vllm_pods,
        "owners": sorted("%s %s" % usage.owners[("prod-serving", p)] for p in vllm_pods)}
    # fine-tune: one Job a night, pods <job>-<5>, more than five of them: the first five in order.
    fine_pods = sorted({s.pod for s in usage.series if s.namespace == "training" and s.pod.startswith("fine-tune-")})
    assert len(fine_pods) > 6
    fine = services[("fine-tune", "training")]["identity"]
    assert fine["pods"] == len(fine_pods) and fine["examples"] == fine_pods[:5]
    assert fine["owners"] == sorted({"%s %s" % usage.owners[("training", p)] for p in fine_pods})[:5]


def _example(days: int = 14):
    usage = usage_synth.example_day(days=days)
    inventory = example_inventory()
    return usage, inventory


def _add_pod(usage, ns, pod, owner=None):
    if owner is not None:
        usage.owners[(ns, pod)] = owner


def _add_series(usage, node, gpu, ns, pod, mem=3000.0, act=0.05):
    usage.series.append(ua.GpuSeries(node=node, gpu=gpu, uuid="GPU-%s-%d" % (node, gpu), instance=None, profile=None,
                                     model="h200-141gb", namespace=ns, pod=pod,
                                     fb_used=np.full(usage.steps, mem), active=np.full(usage.steps, act)))


def _selected():
    """The example day's 14 days with:
    - a new workload reranker (production, MIG 1g.18gb) whose selector matches only a pod that
      kube-state-metrics lists and no GPU series has;
    - notebooks selected by a name prefix nb- that matches only such a pod too, so its
      StatefulSet notebooks-<i> pods match no workload and group as notebooks (renamed
      notebooks-unmatched: the inventory has that name);
    - a StatefulSet named notebooks in a namespace of no team (aaa-lab);
    - speech-to-text without its first 13 samples."""
    usage, inventory = _example()
    inventory["gpushare_workloads"].append({"name": "reranker", "team": "production", "kind": "serving",
                                            "sharing": "mig", "mig_profile": "1g.18gb"})
    _add_pod(usage, "prod-serving", "reranker-5d8f7c9b6d-a1b2c", ("ReplicaSet", "reranker-5d8f7c9b6d"))
    _add_pod(usage, "data-science", "nb-0", ("StatefulSet", "nb"))
    _add_pod(usage, "aaa-lab", "notebooks-0", ("StatefulSet", "notebooks"))
    _add_series(usage, "gpu01", 3, "aaa-lab", "notebooks-0")
    inventory["gpushare_advise_match"] = {"reranker": {"owner_name": "reranker"}, "notebooks": {"name_prefix": "nb-"}}
    for s in usage.series:
        if s.pod.startswith("speech-to-text-"):
            s.active[:13] = np.nan
            s.fb_used[:13] = np.nan
    return ua.advise(usage, inventory, check=False)


def _check_a_service_seen_five_minutes_short_says_how_long(selected):
    # speech-to-text without its first 13 samples: 4032 - 13 = 4019 points of 5 minutes = 13.955 days,
    # seen over all of them: 14.0 and 14.0 to one place, short of 14 days less the hour of slack.
    speech = _by_name(selected)[("speech-to-text", "prod-serving")]
    assert (speech["status"], speech["reason"]) == \
        ("not_enough_data", "seen over 14.0 days (14.0 days of samples); needs 14")


def _check_a_workload_whose_selectors_match_only_pods_without_a_gpu(selected):
    services = _by_name(selected)
    # Its selectors match (rule match), no pod of production matches no workload: no hint.
    assert services[("reranker", None)] == {
        "name": "reranker", "team": "production", "namespace": None,
        "declared": {"kind": "serving", "sharing": "mig", "replicas": 1, "gpus": 1, "mig_profile": "1g.18gb"},
        "status": "no_data",
        "reason": "not seen in the GPU metrics: its selectors match pods that hold no GPU in the metrics; the "
                  "current entry is kept",
        "identity": {"rule": "match", "pods": 0}}


def _check_a_group_named_like_a_workload_is_not_proposed_twice(selected):
    rows = {(r["name"], r["namespace"]): r for r in selected["unmatched"]}
    # notebooks-<i> of data-science: group notebooks, renamed notebooks-unmatched.
    row = rows[("notebooks-unmatched", "data-science")]
    assert (row["status"], row["proposed"], row["duplicates"], row["suggested_match"], row["reason"]) == \
        ("unmatched", False, None, None, "its pods match no workload, but the inventory has a workload named "
                                         "notebooks-unmatched: not proposed twice")
    # The StatefulSet notebooks of aaa-lab (no team's namespace), sorted before data-science, stays as it is,
    # and the rows after it are still there.
    lab = _by_name(selected)[("notebooks-unmatched", "aaa-lab")]
    assert (lab["status"], lab["reason"], lab["identity"]["rule"]) == \
        ("unknown_namespace", "namespace aaa-lab belongs to no team of gpushare_teams", "unmatched")
    assert sorted(rows) == [("notebooks-unmatched", "aaa-lab"), ("notebooks-unmatched", "data-science")]
    assert "new" not in lab


def _renamed():
    """The example day's 14 days with speech-to-text's entry renamed transcribe (still a
    production serving workload: its pods now match no workload, and it is seen in none) and
    fine-tune's renamed trainer of kind batch (training's fine-tune Jobs are of kind training);
    two bare pods whisper-0 and whisper-1 in data-science, and two in training, that
    kube-state-metrics never listed."""
    usage, inventory = _example()
    for w in inventory["gpushare_workloads"]:
        if w["name"] == "speech-to-text":
            w["name"] = "transcribe"
        if w["name"] == "fine-tune":
            w.update(name="trainer", kind="batch")
    for i in range(2):
        _add_series(usage, "gpu02", i, "data-science", "whisper-%d" % i)
        _add_series(usage, "gpu03", i, "training", "whisper-%d" % i)
    return usage, ua.advise(usage, inventory, check=False)


def _check_a_group_like_a_workload_seen_in_no_pod_gets_a_selector_by_owner(renamed):
    _usage, advice = renamed
    rows = {r["name"]: r for r in advice["unmatched"]}
    speech = rows["speech-to-text"]
    # Its pods have a controller (ReplicaSet speech-to-text-<hash>): selected by owner name.
    assert (speech["status"], speech["duplicates"], speech["suggested_match"]) == \
        ("unmatched", "transcribe", {"transcribe": {"namespace": "prod-serving", "owner_name": "speech-to-text"}})
    # fine-tune is no batch like trainer: proposed as a new workload of that name.
    fine = rows["fine-tune"]
    assert (fine["status"], fine["proposed"], fine["duplicates"], fine["reason"]) == \
        ("ok", True, None, "proposed as a new workload")


def _check_pods_kube_state_metrics_never_listed_show_unknown_owners(renamed):
    _usage, advice = renamed
    rows = {(r["name"], r["namespace"]): r for r in advice["unmatched"]}
    # whisper-0 and whisper-1: bare pods sharing the prefix whisper, no owner known: "? ?".
    whisper = rows[("whisper", "data-science")]
    assert (whisper["pods"], whisper["examples"], whisper["owners"]) == (2, ["whisper-0", "whisper-1"], ["? ?"])


def _check_a_name_is_proposed_once(renamed):
    _usage, advice = renamed
    rows = {(r["name"], r["namespace"]): r for r in advice["unmatched"]}
    # whisper of data-science (sorted first) is proposed as the new workload whisper; training's
    # whisper then finds the name taken.
    assert (rows[("whisper", "data-science")]["status"], rows[("whisper", "data-science")]["proposed"]) == ("ok", True)
    training = rows[("whisper", "training")]
    assert (training["status"], training["proposed"], training["reason"]) == \
        ("unmatched", False, "its pods match no workload and whisper is no free workload name: not proposed")


# One history per test: mutmut runs a mutant against the tests that called its function, and a
# fixture shared by several tests would be counted as called by the first of them only.
def test_real_cluster_day_without_selectors():
    real = _real()
    _check_a_workload_seen_in_no_pod_is_reported_with_its_entry_and_the_teams_strays(real)
    _check_pods_that_match_no_workload_are_rows_with_their_pods_owners_and_reason(real)
    _check_a_services_identity_names_its_rule_first_five_pods_and_owners(real)


def test_selectors_that_match_pods_without_a_gpu():
    selected = _selected()
    _check_a_workload_whose_selectors_match_only_pods_without_a_gpu(selected)
    _check_a_group_named_like_a_workload_is_not_proposed_twice(selected)
    _check_a_service_seen_five_minutes_short_says_how_long(selected)


def test_renamed_workloads_and_pods_without_owners():
    renamed = _renamed()
    _check_a_group_like_a_workload_seen_in_no_pod_gets_a_selector_by_owner(renamed)
    _check_pods_kube_state_metrics_never_listed_show_unknown_owners(renamed)
    _check_a_name_is_proposed_once(renamed)


def test_a_series_with_no_memory_or_activity_sample_is_no_service():
    # vllm-chat's only series holds FB_FREE alone (dcgm-exporter's counters without FB_USED and
    # activity for it): nothing says its pod was there, so vllm-chat is seen in no pod. (This
    # crashed the advisor with numpy's "need at least one array to concatenate".)
    usage = hourly_history(14)
    usage.series[0].fb_used = None
    usage.series[0].active = None
    usage.series[0].fb_free = np.full(usage.steps, 100.0 * GIB)
    vllm, advice = vllm_advice(usage)
    assert (vllm["status"], vllm["namespace"], vllm["identity"]) == ("no_data", None, {"rule": "name", "pods": 0})
    assert [s["name"] for s in advice["services"] if s["status"] == "ok"] == ["classifier"]


def _stray(usage, namespace, pod, owner=None, up=None):
    b_up = np.ones(usage.steps, dtype=bool) if up is None else up
    if owner is not None:
        usage.owners[(namespace, pod)] = owner
    usage.series.append(ua.GpuSeries(node="gpu02", gpu=0, uuid="GPU-gpu02-0", instance=None, profile=None,
                                     model="h200-141gb", namespace=namespace, pod=pod,
                                     fb_used=np.where(b_up, 4 * GIB, np.nan), active=np.where(b_up, 0.3, np.nan)))


def test_a_group_like_a_no_data_notebook_whose_pods_no_owner_lists_gets_a_name_prefix():
    # lab-0 in data-science: a GPU series, but kube-state-metrics never listed the pod, seen for
    # 2 of 14 days (not enough data, so no kind). notebooks (data-science) is seen in no pod: the
    # group looks like it and is suggested by namespace, no owner and its name prefix.
    usage = hourly_history(14)
    _stray(usage, "data-science", "lab-0", up=hours_up(14, 0, 48))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "data-science")
    assert (row["name"], row["duplicates"]) == ("lab-0", "notebooks")
    assert row["suggested_match"] == {"notebooks": {"namespace": "data-science", "owner_kind": "<none>",
                                                    "name_prefix": "lab-0-"}}


def test_a_group_whose_name_is_no_workload_name_is_proposed_under_its_rewritten_name():
    # A Deployment llama.cpp-server of team training (dots are allowed in its name, not in a
    # workload's), up all along: a serving service, and training's only no-data workload,
    # fine-tune, is of another kind, so it is proposed.
    usage = hourly_history(14)
    _stray(usage, "training", "llama.cpp-server-6b7c8d9f5-abcde", ("ReplicaSet", "llama.cpp-server-6b7c8d9f5"))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "training")
    assert (row["name"], row["proposed"]) == ("llama-cpp-server", True)


def test_a_group_whose_rewritten_name_is_a_workload_is_not_proposed_and_says_which():
    # A Deployment vllm.chat: not vllm-chat's by name (no controller named vllm-chat or
    # vllm-chat-...), but its workload name would be vllm-chat, which the inventory has.
    usage = hourly_history(14)
    _stray(usage, "prod-serving", "vllm.chat-6b7c8d9f5-abcde", ("ReplicaSet", "vllm.chat-6b7c8d9f5"))
    advice = ua.advise(usage, example_inventory(), check=False)
    row = next(r for r in advice["unmatched"] if r["namespace"] == "prod-serving")
    assert (row["name"], row["status"], row["proposed"]) == ("vllm.chat", "unmatched", False)
    assert row["reason"] == ("its pods match no workload, but the inventory has a workload named vllm-chat: not "
                             "proposed twice")


class _OwnerRows:
    """kube_pod_owner as Prometheus answers usage._owners' query."""
    url = "http://prometheus.test"

    def __init__(self, rows):
        self.rows = rows

    def query(self, q, _t):
        assert q.startswith("max by (namespace, pod, owner_kind, owner_name) (max_over_time(kube_pod_owner{"), q
        return [{"metric": m, "value": [0, "1"]} for m in self.rows]


def test_owner_rows_without_a_namespace_or_a_pod_are_left_out():
    # kube-state-metrics always sets both labels; a copy relabelled on the way may not.
    grid = usage_module._Grid(start=0, end=3600, step=300, steps=13, window="1h")
    rs = {"owner_kind": "ReplicaSet", "owner_name": "vllm-chat-6c9f7d8b5d"}
    rows = [dict(rs, namespace="prod-serving", pod=VLLM_POD), dict(rs, namespace="prod-serving"),
            dict(rs, pod=VLLM_POD), dict(rs, namespace="", pod="x")]
    assert usage_module._owners(_OwnerRows(rows), grid, ["prod-serving"]) == \
        {("prod-serving", VLLM_POD): ("ReplicaSet", "vllm-chat-6c9f7d8b5d")}


def test_a_series_with_a_namespace_and_no_pod_is_a_device_without_a_pod():
    # gpu02's GPU 0 reported under a namespace but no pod (the exporter attributed it half-way):
    # no pod, no service; noted as a device with samples but no pod.
    usage = hourly_history(14)
    _stray(usage, "prod-serving", None)
    advice = ua.advise(usage, example_inventory(), check=False)
    assert [s["name"] for s in advice["services"] if s["status"] == "ok"] == ["classifier", "vllm-chat"]
    assert advice["notes"][-1] == ("devices with samples but no pod at times (idle, or not attributed by the exporter: "
                                   "DRA GPUs, shared resources missing from NVIDIA_RESOURCE_NAMES; counted per node "
                                   "only): gpu02 GPU 0")
