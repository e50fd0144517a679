"""The example day's team manifests (teams/<team>/<workload>.yaml, renderers/render_teams),
created on the twin as they are written:

* by a member of another team (impersonated, the groups of the inventory's ``members``) each
  is refused: only the team's groups may write in its namespace;
* by a member of its team each passes admission (the Plan's policies, Pod Security, Kueue's
  webhooks), Kueue admits what the Plan says runs at 08:00 (the base state) and its pods run
  on gpu01 with the resource the Plan gives them; the fine-tune waits, as the Plan says
  (report.md: training has 1 free GPU and can borrow none by day).

Everything created is deleted at the end, and its workloads gone, so later twin tests find
the quota free. test_zz_mixed_fleet.py does the same with mixed-fleet's manifests
(applied_as_members, asks, running, admitting_queue).
"""
from __future__ import annotations

import contextlib
import urllib.parse

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_teams import team_files

TIMEOUT = 90
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
PATHS = {"Pod": ("/api/v1", "pods"), "Job": ("/apis/batch/v1", "jobs"), "Deployment": ("/apis/apps/v1", "deployments")}
# KWOK completes a Job's pods at once unless told otherwise.
RUNS = {"pod-complete.stage.kwok.x-k8s.io/delay": "1h", "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1h"}
# What runs at 08:00 by the Plan (report.md, "Base state"), and how many pods.
RUNNING = {"vllm-chat": 1, "embeddings": 1, "classifier": 1, "speech-to-text": 1, "notebooks": 5}
WAITING = {"fine-tune"}


def collection(obj) -> str:
    prefix, resource = PATHS[obj["kind"]]
    return f"{prefix}/namespaces/{obj['metadata']['namespace']}/{resource}"


def manifests(plan) -> list[tuple[str, dict]]:
    out = []
    for f in team_files(plan):
        if f["path"].endswith(".yaml"):
            for obj in yaml.safe_load_all(f["content"]):
                if obj["kind"] == "Job":
                    obj["spec"]["template"]["metadata"]["annotations"] = dict(RUNS)
                # Pods go at once when the test deletes them (KWOK waits out a pod's grace period).
                (obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"])["terminationGracePeriodSeconds"] = 0
                out.append((f["path"].split("/")[1], obj))
    return out


def pods_of(twin, ns, app) -> list[dict]:
    selector = urllib.parse.quote(f"app.kubernetes.io/name={app}")
    return [p for p in twin.get(f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
            if not p["metadata"].get("deletionTimestamp")]


@contextlib.contextmanager
def applied_as_members(twin, plan):
    """Each of the Plan's team manifests sent by a member of every other team (dry run) and
    created by a member of its own; yields (refusals: (name, other team) -> HTTP status, the
    created objects), then deletes them and waits until their workloads and pods are gone."""
    teams = {t["name"]: t for t in plan["teams"]}
    member = {name: twin.as_member(f"{name}-member", t["members"][0]) for name, t in teams.items()}
    refusals, made = {}, []
    try:
        for team, obj in manifests(plan):
            for other in sorted(set(teams) - {team}):
                try:
                    member[other].request("POST", collection(obj) + "?dryRun=All", obj)
                    refusals[(obj["metadata"]["name"], other)] = 201
                except Exception as err:  # pylint: disable=broad-exception-caught  # ApiError: its status
                    refusals[(obj["metadata"]["name"], other)] = getattr(err, "status", None)
            made.append(member[team].create(collection(obj), obj))
        yield refusals, made
    finally:
        for obj in made:
            twin.request("DELETE", f"{collection(obj)}/{obj['metadata']['name']}",
                         {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                          "gracePeriodSeconds": 0}, ok=(200, 202, 404))
        for space in sorted({o["metadata"]["namespace"] for o in made}):
            twin.wait_for(f"no workloads or pods left in {space}", lambda space=space: not (
                twin.get(f"{KUEUE}/namespaces/{space}/workloads")["items"]
                or twin.get(f"/api/v1/namespaces/{space}/pods")["items"]), timeout=TIMEOUT)


def asks(made) -> dict:
    """app -> (namespace, the first container's limits) of the created objects."""
    out = {}
    for obj in made:
        spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
        out[obj["metadata"]["labels"]["app.kubernetes.io/name"]] = (obj["metadata"]["namespace"],
                                                                    spec["containers"][0]["resources"].get("limits", {}))
    return out


def running(twin, ns, app, count) -> list[dict]:
    """Waits until exactly ``count`` pods of ``app`` run, ungated (Kueue admitted them); returns them."""
    def ready():
        pods = [p for p in pods_of(twin, ns, app) if p["status"].get("phase") == "Running"]
        return pods if len(pods) == count else None
    pods = twin.wait_for(f"{app}: {count} pod(s) running", ready, timeout=TIMEOUT)
    for p in pods:
        assert not p["spec"].get("schedulingGates"), p["metadata"]["name"]
    return pods


def admitting_queue(twin, pod) -> str | None:
    """The ClusterQueue that admitted the pod's Workload (its Job's, for a Job's pod; its own,
    for a plain or Deployment pod, which Kueue's pod integration manages), None if none did."""
    ns = pod["metadata"]["namespace"]
    owner = next((("Job", r["name"]) for r in pod["metadata"].get("ownerReferences", []) if r["kind"] == "Job"),
                 ("Pod", pod["metadata"]["name"]))
    for wl in twin.get(f"{KUEUE}/namespaces/{ns}/workloads")["items"]:
        if owner in {(r["kind"], r["name"]) for r in wl["metadata"].get("ownerReferences", [])}:
            return (wl["status"].get("admission") or {}).get("clusterQueue")
    return None


@pytest.fixture(name="created", scope="module")
def fixture_created(twin_session, roles_apply, example_plan):
    del roles_apply
    with applied_as_members(twin_session, example_plan) as result:
        yield result


def test_another_teams_member_may_not_create_them(created):
    refusals, _made = created
    assert refusals and all(status == 403 for status in refusals.values()), refusals


def test_each_runs_where_the_plan_says_or_waits(twin_session, created, example_plan):
    _refusals, made = created
    apps = asks(made)
    for app, count in RUNNING.items():
        ns, limits = apps[app]
        for p in running(twin_session, ns, app, count):
            assert p["spec"]["nodeName"] == "gpu01"
            assert p["spec"]["containers"][0]["resources"]["limits"] == {k: str(v) for k, v in limits.items()}
    ns, _limits = apps["fine-tune"]
    job = twin_session.get(f"/apis/batch/v1/namespaces/{ns}/jobs/fine-tune")
    assert job["spec"]["suspend"] is True and not pods_of(twin_session, ns, "fine-tune")
    assert WAITING == {w["name"] for w in example_plan["workloads"]} - set(RUNNING)
