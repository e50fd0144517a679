# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The team files (renderers/render_teams): every manifest of every example inventory passes
the Kubernetes OpenAPI schemas of the release the twin runs (k8s.io/kubernetes, through
tests/twin/kube-openapi.sh; no field the schema does not know), the Pod Security level of its
namespace (tests/unit/pod_security.py, from the published standards), and the Plan's own
admission policies as a member of its team (cel_subset); moved to another team's namespace it
is refused, and only its team's groups may write in its namespace. What the example day's
manifests ask for is counted by hand from its inventory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_admission import admission_objects
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import namespace_objects
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_teams import team_files
from cel_subset import admit
from inventories import EXAMPLE_NAMES, ROOT, load_example
from pod_security import VIOLATIONS

KUBE_OPENAPI = ROOT / "tests" / "twin" / "kube-openapi.sh"
SCHEMAS = {"Pod": "io.k8s.api.core.v1.Pod", "Deployment": "io.k8s.api.apps.v1.Deployment", "Job": "io.k8s.api.batch.v1.Job"}
GROUPS = {"Pod": ("", "pods"), "Deployment": ("apps", "deployments"), "Job": ("batch", "jobs")}
KUEUE_GATE = {"name": "kueue.x-k8s.io/admission"}


@pytest.fixture(scope="module", name="components")
def fixture_components() -> dict:
    """Every schema of the core, apps and batch v1 OpenAPI v3 documents. No Go or no module
    proxy is a failure, not a skip: without the documents nothing here is checked."""
    run = subprocess.run(["bash", str(KUBE_OPENAPI)], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("%s failed (exit %d):\n%s" % (KUBE_OPENAPI, run.returncode, run.stderr), pytrace=False)
    schemas = {}
    for name in ("api__v1_openapi.json", "apis__apps__v1_openapi.json", "apis__batch__v1_openapi.json"):
        schemas.update(json.loads((Path(run.stdout.strip()) / name).read_text())["components"]["schemas"])
    return schemas


def _resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema or ("allOf" in schema and len(schema["allOf"]) == 1 and "properties" not in schema):
        schema = components[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema["allOf"][0]
    return schema


def unknown_fields(value, schema: dict, components: dict, path: str = "") -> list[str]:
    """Fields the schema does not know (the API server drops or refuses them: kubectl's strict
    field validation)."""
    schema = _resolve(schema, components)
    if isinstance(value, dict) and "properties" in schema:
        out = []
        for key, item in value.items():
            if key not in schema["properties"]:
                out.append(path + "." + key)
            else:
                out += unknown_fields(item, schema["properties"][key], components, path + "." + key)
        return out
    if isinstance(value, list) and "items" in schema:
        return [p for i, item in enumerate(value) for p in unknown_fields(item, schema["items"], components, "%s[%d]" % (path, i))]
    return []


def manifests(plan: dict) -> list[tuple[str, dict]]:
    """(team, object) of every teams/<team>/<workload>.yaml."""
    return [(f["path"].split("/")[1], obj) for f in team_files(plan) if f["path"].endswith(".yaml")
            for obj in yaml.safe_load_all(f["content"])]


def pod_spec(obj: dict) -> dict:
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_manifest_passes_the_kubernetes_schema(example, components):
    found = manifests(PLANS[example])
    assert found
    for _team, obj in found:
        name = SCHEMAS[obj["kind"]]
        jsonschema.validate(obj, {"$ref": "#/components/schemas/" + name, "components": {"schemas": components}})
        assert unknown_fields(obj, components[name], components) == [], obj["metadata"]["name"]


def test_the_schema_check_catches_a_misspelt_field(components):
    _team, obj = manifests(PLANS["four-gpu-server"])[0]
    obj["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    assert unknown_fields(obj, components[SCHEMAS[obj["kind"]]], components) == [".spec.template.spec.containers[0].resource"]
    obj["spec"]["replicas"] = "one"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, {"$ref": "#/components/schemas/" + SCHEMAS[obj["kind"]], "components": {"schemas": components}})


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_manifest_passes_its_namespaces_pod_security_level(example):
    plan = PLANS[example]
    level = {ns["name"]: ns["pod_security"] for ns in plan["admission"]["namespaces"]}
    for _team, obj in manifests(plan):
        assert VIOLATIONS[level[obj["metadata"]["namespace"]]](pod_spec(obj)) == [], obj["metadata"]["name"]
    # And restricted wherever the namespace is restricted: the checker is not vacuous.
    assert "restricted" in level.values()


def test_the_pod_security_check_catches_what_restricted_refuses():
    plan = PLANS["four-gpu-server"]
    baseline = next(obj for _t, obj in manifests(plan) if obj["metadata"]["namespace"] == "data-science")
    assert VIOLATIONS["baseline"](pod_spec(baseline)) == []
    assert "notebooks runAsNonRoot not true" in VIOLATIONS["restricted"](pod_spec(baseline))
    spec = pod_spec(next(obj for _t, obj in manifests(plan) if obj["metadata"]["namespace"] == "training"))
    spec["containers"][0]["securityContext"]["capabilities"] = {"drop": ["NET_RAW"]}
    assert VIOLATIONS["restricted"](spec) == ["fine-tune does not drop ALL capabilities"]


def _policies(plan: dict) -> list[tuple[dict, dict]]:
    objects = admission_objects(plan)
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    return [(policies[b["spec"]["policyName"]], b) for b in objects if b["kind"] == "ValidatingAdmissionPolicyBinding"]


def refusals(plan: dict, obj: dict) -> list[str]:
    """What the Plan's policies refuse of a member creating ``obj``, and of the controller
    creating its pods (as Kueue's pod webhook leaves them: gated)."""
    out = []
    group, resource = GROUPS[obj["kind"]]
    requests = [(obj, group, resource, "alice")]
    if obj["kind"] == "Pod":
        gated = json.loads(json.dumps(obj))
        gated["spec"]["schedulingGates"] = [KUEUE_GATE]
        requests = [(gated, group, resource, "alice")]
    else:
        pod = {"apiVersion": "v1", "kind": "Pod", "spec": dict(pod_spec(obj), schedulingGates=[KUEUE_GATE]),
               "metadata": {"name": obj["metadata"]["name"] + "-x", "namespace": obj["metadata"]["namespace"],
                            "labels": obj["spec"]["template"]["metadata"]["labels"]}}
        if obj["kind"] == "Job":
            pod["metadata"]["ownerReferences"] = [{"kind": "Job", "name": obj["metadata"]["name"], "controller": True,
                                                   "apiVersion": "batch/v1", "uid": "u"}]
            requests.append((pod, "", "pods", "system:serviceaccount:kube-system:job-controller"))
        else:
            requests.append((pod, "", "pods", "system:serviceaccount:kube-system:replicaset-controller"))
    for body, grp, res, user in requests:
        for policy, binding in _policies(plan):
            out += admit(policy, binding, body, group=grp, resource=res, username=user)
    return out


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_a_member_of_the_team_may_create_every_manifest_and_another_team_may_not(example):
    plan = PLANS[example]
    spaces = {ns["name"]: ns["team"] for ns in plan["admission"]["namespaces"]}
    writers = {o["metadata"]["namespace"]: {s["name"] for s in o["subjects"]}
               for o in namespace_objects(plan) if o["kind"] == "RoleBinding"}
    members = {t["name"]: set(t["members"]) for t in plan["teams"]}
    for team, obj in manifests(plan):
        namespace = obj["metadata"]["namespace"]
        assert spaces[namespace] == team
        assert refusals(plan, obj) == [], (obj["metadata"]["name"], refusals(plan, obj))
        # Only the team's groups may write in its namespace (the RoleBinding is all RBAC grants there).
        assert writers.get(namespace, set()) == members[team]
        # The same manifest in another team's namespace: its queue label is not that namespace's queue.
        for other in sorted(ns for ns, owner in spaces.items() if owner != team):
            moved = json.loads(json.dumps(obj))
            moved["metadata"]["namespace"] = other
            assert refusals(plan, moved), (obj["metadata"]["name"], other)


# By hand from inventory-examples/four-gpu-server: each workload's team, its namespace
# (group_vars/all/teams.yml), the object its kind makes, and what each pod asks for: whole
# GPUs as gpus says; the MIG profile its memory needs on an H200 (6 and 12 GiB: 1g.18gb,
# 20 GiB: 1g.35gb, NVIDIA's H200 MIG table); the notebooks one replica of GPU 2's time-slicing,
# realised as one full-size 7g.141gb instance (docs/sharing-windows.md).
EXAMPLE_DAY = {
    "vllm-chat": ("production", "prod-serving", "Deployment", 1, {"nvidia.com/gpu": 1}),
    "embeddings": ("production", "prod-serving", "Deployment", 1, {"nvidia.com/mig-1g.18gb": 1}),
    "classifier": ("production", "prod-serving", "Deployment", 1, {"nvidia.com/mig-1g.18gb": 1}),
    "speech-to-text": ("production", "prod-serving", "Deployment", 1, {"nvidia.com/mig-1g.35gb": 1}),
    "notebooks": ("data-science", "data-science", "Pod", 5, {"nvidia.com/mig-7g.141gb.shared": 1}),
    "fine-tune": ("training", "training", "Job", 1, {"nvidia.com/gpu": 2}),
}


def test_the_example_days_manifests_ask_for_what_the_inventory_says():
    plan = PLANS["four-gpu-server"]
    got = {}
    for team, obj in manifests(plan):
        name = obj["metadata"]["labels"]["app.kubernetes.io/name"]
        pods = obj["spec"].get("replicas") or obj["spec"].get("parallelism") or 1
        before = got.get(name, (None, None, None, 0, None))[3]
        got[name] = (team, obj["metadata"]["namespace"], obj["kind"], before + pods,
                     pod_spec(obj)["containers"][0]["resources"]["limits"])
        labels = obj["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == team and labels["kueue.x-k8s.io/priority-class"] == team
        # Production's PriorityClass only in production's namespace.
        assert (pod_spec(obj).get("priorityClassName") == "gpushare-production") == (team == "production")
        if obj["kind"] == "Job":
            assert obj["spec"]["suspend"] is True and pod_spec(obj)["restartPolicy"] == "Never"
    assert got == EXAMPLE_DAY


def test_each_team_page_says_what_each_workload_gets_in_each_window():
    pages = {f["path"]: f["content"] for f in team_files(PLANS["four-gpu-server"])}
    training, science = pages["teams/training.md"], pages["teams/data-science.md"]
    assert "window night (19:00-07:00)" in training and "base state (07:00-19:00)" in training
    # By day the 2-GPU fine-tune waits (training owns GPU 3 only; vLLM holds production's GPU 0);
    # at night it runs on GPU 3 and the borrowed GPU 2 (docs/sharing-windows.md).
    training = training[training.index("## What each workload gets"):]
    science = science[science.index("## What each workload gets"):]
    row = next(line for line in training.splitlines() if line.startswith("| fine-tune |"))
    day, night = row.split(" | ")[1:3]
    assert "waits" in day and "gpu01 GPU 2 (borrowed from data-science)" in night and "gpu01 GPU 3" in night
    row = next(line for line in science.splitlines() if line.startswith("| notebooks |"))
    assert "must have ended" in row.split(" | ")[2]
    assert "[`training/fine-tune.yaml`](training/fine-tune.yaml)" in pages["teams/training.md"]
