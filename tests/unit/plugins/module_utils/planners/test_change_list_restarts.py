# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""changes.json lists exactly the pods that restart, checked by an oracle that shares nothing
with the planner's change code (planners/changes.py) or its request code (workload_requests).

The oracle reads, of each of the two plans, only what a person could read: the per-GPU MIG
slices of plan.json (profile and the workload replica on it, MIG on or off) and the team
manifests written beside it (teams/<team>/<workload>.yaml: namespace, queue label and what
each pod asks for). A pod (workload replica in both plans) restarts when

* it held a MIG slice on a GPU whose set of slice profiles differs in the new plan, or whose
  MIG mode flips (the GPU is re-cut: cordon, evict, re-cut, uncordon);
* it asked for a device-plugin resource that a re-cut or removed GPU served (it may be there);
* its manifest asks for something else, or sits in another namespace or queue (its team
  redeploys it).

Checked on the example day edited (a service resized, one added) and on 200 random small
fleets under random edits, with both replan modes.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan, plan_and_changes
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.plan_files import changes_json
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_teams import team_files
from inventories import example_day

FLEETS = int(__import__("os").environ.get("FLEETS", 200))


# ----------------------------------------------------------------------------- oracle

def gpu_cuts(plan: dict) -> dict:
    """(node, index) -> None (MIG off) or the Counter of its slices' profiles, from the slices."""
    out = {}
    for node in plan["nodes"]:
        for gpu in node["gpus"]:
            slices = (gpu.get("mig") or {}).get("slices")
            out[(node["name"], gpu["index"])] = None if gpu.get("mig") is None else Counter(s["profile"] for s in slices)
    return out


def mig_holders(plan: dict) -> dict:
    """(workload, replica) -> (node, index, profile) of the slice it holds (MIG GPUs only)."""
    return {(s["workload"], s["replica"]): (node["name"], gpu["index"], s["profile"])
            for node in plan["nodes"] for gpu in node["gpus"] if gpu["mode"] == "mig"
            for s in gpu["mig"]["slices"] if s["workload"]}


def served(gpu: dict) -> set:
    """What a GPU serves, read from plan.json as a person reads the split table."""
    if gpu.get("resource"):
        return {gpu["resource"]}
    return {"nvidia.com/mig-" + s["profile"] for s in (gpu.get("mig") or {}).get("slices", [])}


def manifest_pods(plan: dict) -> dict:
    """(workload, replica) -> (namespace, queue, what the pod asks for), from the team manifests.
    A MIG workload's replicas are matched to its objects by the profile of the slice each holds."""
    holders = mig_holders(plan)
    pods = {}
    for f in team_files(plan):
        if not f["path"].endswith(".yaml"):
            continue
        workload = f["path"].rsplit("/", 1)[1][:-len(".yaml")]
        asks = []
        for obj in yaml.safe_load_all(f["content"]):
            spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
            container = spec["containers"][0]
            limits = container["resources"].get("limits", {})
            claims = tuple(c["resourceClaimTemplateName"] for c in spec.get("resourceClaims", []))
            what = (obj["metadata"]["namespace"], obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
                    tuple(sorted(limits.items())), claims)
            count = {"Pod": 1, "Deployment": obj["spec"].get("replicas"), "Job": obj["spec"].get("parallelism")}[obj["kind"]]
            asks += [what] * count
        mine = sorted(r for (w, r) in holders if w == workload)
        if mine:
            # Each replica takes the manifest entry asking for its slice's profile.
            left = list(asks)
            for r in mine:
                want = "nvidia.com/mig-" + holders[(workload, r)][2]
                entry = next(a for a in left if dict(a[2]).get(want) == 1)
                left.remove(entry)
                pods[(workload, r)] = entry
            assert not left
        else:
            for r, entry in enumerate(asks):
                pods[(workload, r)] = entry
    return pods


def oracle(old: dict, new: dict) -> tuple[set, set, set]:
    """(pods that restart, pods that start, pods that end)."""
    old_cut, new_cut = gpu_cuts(old), gpu_cuts(new)
    recut = {k for k in old_cut if k in new_cut and old_cut[k] != new_cut[k]}
    gone = set(old_cut) - set(new_cut)
    old_gpus = {(n["name"], g["index"]): g for n in old["nodes"] for g in n["gpus"]}
    old_pods, new_pods = manifest_pods(old), manifest_pods(new)
    holders = mig_holders(old)
    restart = set()
    for key in set(old_pods) & set(new_pods):
        if old_pods[key] != new_pods[key]:
            restart.add(key)
        elif key in holders:
            if holders[key][:2] in recut | gone:
                restart.add(key)
        elif any(name in served(old_gpus[g]) for g in recut | gone for name, _n in old_pods[key][2]):
            restart.add(key)
    return restart, set(new_pods) - set(old_pods), set(old_pods) - set(new_pods)


def listed(changes: dict) -> tuple[set, set, set]:
    return ({(r["workload"], r["replica"]) for r in changes["restarts"]},
            {(r["workload"], r["replica"]) for r in changes["started"]},
            {(r["workload"], r["replica"]) for r in changes["ended"]})


def check(variables: dict, previous_text: str) -> dict:
    plan, changes = plan_and_changes(variables, previous_text)
    # changes.json is what is checked: the file's text, read back ({"pending": false} when empty).
    written = json.loads(changes_json(changes))
    if not written["pending"]:
        written = {"restarts": [], "started": [], "ended": [], "repartitioned": []}
    assert listed(written) == oracle(json.loads(previous_text), plan)
    recut = {"%s GPU %d" % k for k, v in gpu_cuts(json.loads(previous_text)).items()
             if k in gpu_cuts(plan) and gpu_cuts(plan)[k] != v}
    assert set(written["repartitioned"]) == recut
    return written


# ----------------------------------------------------------------------------- the example day

def _example(edit, replan="stable"):
    variables = example_day()
    text = json.dumps(build_plan(variables))
    edit(variables["gpushare_workloads"])
    variables["gpushare_policy"]["replan"] = replan
    return check(variables, text)


def _resize_and_add(workloads):
    next(w for w in workloads if w["name"] == "speech-to-text")["memory_gib"] = 40
    workloads.append({"name": "reranker", "team": "production", "kind": "serving", "isolation": "hardware",
                      "memory_gib": 30})


@pytest.mark.parametrize("replan", ["stable", "optimal"])
def test_the_example_day_resized_and_extended_lists_exactly_the_pods_that_restart(replan):
    changes = _example(_resize_and_add, replan)
    # speech-to-text outgrows its 1g.35gb (33 GiB usable): a new resource, so its team redeploys it.
    stt = next(r for r in changes["restarts"] if r["workload"] == "speech-to-text")
    assert stt["manifest"] and "nvidia.com/mig-1g.35gb" in stt["manifest"]
    assert ("reranker", 0) in listed(changes)[1]


def test_optimal_replan_of_the_example_day_lists_speech_to_text_on_the_recut_gpu():
    """The classifier removed and a 30 GiB reranker added, planned from scratch: GPU 1 gets another
    partition (plan.json of both runs, read by the oracle), so embeddings and speech-to-text,
    which keep their profiles, restart in place."""
    def edit(workloads):
        workloads[:] = [w for w in workloads if w["name"] != "classifier"]
        workloads.append({"name": "reranker", "team": "production", "kind": "serving", "isolation": "hardware",
                          "memory_gib": 30})
    changes = _example(edit, "optimal")
    assert changes["repartitioned"] == ["gpu01 GPU 1"]
    restarts = {(r["workload"], r["replica"]): r for r in changes["restarts"]}
    assert set(restarts) == {("embeddings", 0), ("speech-to-text", 0)}
    assert all(r["manifest"] is None and "in place" in r["reasons"][0]["text"] for r in restarts.values())


# ----------------------------------------------------------------------------- random small fleets

MODELS = ("h200", "a100-40gb", "a30")


def random_inventory(rng: random.Random) -> dict:
    teams = ["red", "blue"][:rng.randint(1, 2)]
    nodes = {}
    for n in range(rng.randint(1, 2)):
        model = rng.choice(MODELS)
        gpus = []
        for i in range(rng.randint(1, 3)):
            mode = rng.choice(["mig", "mig", "auto", "whole", "timeslice"])
            gpu = {"index": i, "mode": mode, "team": rng.choice(teams + [None])}
            if mode == "timeslice":
                gpu["replicas"] = rng.randint(2, 3)
            gpus.append({k: v for k, v in gpu.items() if v is not None})
        nodes["gpu%02d" % n] = {"gpu_model": model, "gpu_count": len(gpus), "gpus": gpus}
    workloads = [random_service(rng, "svc%d" % i, teams) for i in range(rng.randint(1, 4))]
    if rng.random() < 0.4:
        workloads.append({"name": "nb", "team": rng.choice(teams), "kind": "notebook", "sharing": "timeslice",
                          "replicas": 1})
    if rng.random() < 0.4:
        workloads.append({"name": "big", "team": rng.choice(teams), "kind": "serving", "sharing": "whole"})
    return {"gpushare_teams": [{"name": t, "lend": True, "borrow": True} for t in teams],
            "gpushare_nodes": nodes, "gpushare_workloads": workloads,
            "gpushare_policy": {"cluster_name": "random"}}


def random_service(rng: random.Random, name: str, teams: list[str]) -> dict:
    return {"name": name, "team": rng.choice(teams), "kind": "serving", "isolation": "hardware",
            "memory_gib": rng.choice([3, 5, 8, 10, 15, 19, 30]), "replicas": rng.randint(1, 2)}


def random_edit(rng: random.Random, variables: dict) -> None:
    workloads = variables["gpushare_workloads"]
    services = [w for w in workloads if w.get("isolation") == "hardware"]
    kind = rng.choice(["resize", "resize", "add", "remove", "team", "replicas", "gpu"])
    teams = [t["name"] for t in variables["gpushare_teams"]]
    if kind == "resize" and services:
        rng.choice(services)["memory_gib"] = rng.choice([3, 5, 8, 10, 15, 19, 30])
    elif kind == "add":
        workloads.append(random_service(rng, "new%d" % rng.randint(0, 99), teams))
    elif kind == "remove" and len(workloads) > 1:
        workloads.remove(rng.choice(workloads))
    elif kind == "team":
        rng.choice(workloads)["team"] = rng.choice(teams)
    elif kind == "replicas" and services:
        rng.choice(services)["replicas"] = rng.randint(1, 3)
    elif kind == "gpu":
        node = rng.choice(list(variables["gpushare_nodes"].values()))
        gpu = rng.choice(node["gpus"])
        gpu["mode"] = rng.choice(["mig", "auto", "whole"])
        gpu.pop("replicas", None)


def _planned(rng):
    while True:
        variables = random_inventory(rng)
        try:
            return variables, json.dumps(build_plan(variables))
        except PlanInvalid:
            continue


def test_random_fleets_list_exactly_the_pods_that_restart():
    rng = random.Random(35)
    checked = restarts = recuts = 0
    while checked < FLEETS:
        variables, text = _planned(rng)
        for _edit in range(2):
            random_edit(rng, variables)
        variables["gpushare_policy"]["replan"] = rng.choice(["stable", "stable", "optimal"])
        try:
            changes = check(variables, text)
        except PlanInvalid:
            continue
        checked += 1
        restarts += len(changes["restarts"])
        recuts += len(changes["repartitioned"])
    # Not a trivial pass: the edits re-cut GPUs and restart pods.
    assert restarts > FLEETS // 4 and recuts > FLEETS // 8, (restarts, recuts)
