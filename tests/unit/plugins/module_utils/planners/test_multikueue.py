"""MultiKueue from an inventory of clusters (planners/multikueue.py, renderers/render_multikueue.py,
inventory/clusters.py), on multikueue-examples/two-sites.

Expected quotas are hand sums of the example's host_vars (site-a: a-gpu01, 4 H200s, GPUs 0-1
training and 2-3 research; site-b: b-gpu01, 2 H200s, one each); object shapes are checked
against the Kueue v0.19.2 CRD schemas and the field names of Kueue's docs
(setup_multikueue.md), not against the renderer's own constants.
"""
from __future__ import annotations

import base64
import copy
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.clusters import load_clusters
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.errors import PlanInvalid
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.multikueue import plan_manager
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_manifests, render_multikueue

import inventories
from inventories import ROOT

KUEUE_CRDS = ROOT / "tests" / "twin" / "kueue-crds.sh"
CRD_FILES = {"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors",
             "Cohort": "cohorts", "WorkloadPriorityClass": "workloadpriorityclasses", "AdmissionCheck": "admissionchecks",
             "MultiKueueConfig": "multikueueconfigs", "MultiKueueCluster": "multikueueclusters"}


def worker_variables(variables: dict, groups: dict, group: str) -> dict:
    """What the plan module gets for one worker: its group's hosts, the (shared) team list."""
    out = {k: v for k, v in variables.items() if k != "gpushare_nodes"}
    out["gpushare_nodes"] = {h: variables["gpushare_nodes"][h] for h in groups[group]}
    return out


def plan_all(variables: dict | None = None, groups: dict | None = None, worker_vars: dict | None = None):
    """(spec, manager plan, worker results) of the example, or of an edited copy."""
    base_vars, base_groups = inventories.load_clusters()
    variables = variables if variables is not None else base_vars
    groups = groups if groups is not None else base_groups
    spec = load_clusters(variables, groups)
    results = {}
    for w in spec.workers:
        plan = build_plan((worker_vars or {}).get(w.name) or worker_variables(variables, groups, w.group))
        results[w.name] = {"plan": plan, "manifests": render_manifests.render(plan)}
    return spec, plan_manager(spec, results), results


def by_kind(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def gpu_quota(queue: dict) -> int:
    return sum(r["nominalQuota"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]
               for r in f["resources"] if r["name"] == "nvidia.com/gpu")


def problems_of(variables, groups=None) -> list[str]:
    with pytest.raises(PlanInvalid) as err:
        plan_all(variables, groups)
    return [str(p) for p in err.value.problems]


@pytest.fixture(scope="module", name="example")
def fixture_example():
    return plan_all()


def test_manager_quota_is_the_sum_of_what_the_workers_give_each_team(example):
    _spec, manager, _results = example
    queues = by_kind(manager["kueue"]["objects"], "ClusterQueue")
    # site-a gives training 2 and research 2 GPUs, site-b 1 and 1.
    assert {name: gpu_quota(q) for name, q in queues.items()} == {"training": 3, "research": 3}


def test_queues_carry_the_multikueue_check_and_match_the_workers_names(example):
    _spec, manager, results = example
    objects = manager["kueue"]["objects"]
    for queue in by_kind(objects, "ClusterQueue").values():
        assert queue["spec"]["admissionChecksStrategy"]["admissionChecks"] == [{"name": "gpushare-multikueue"}]
    manager_lqs = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "LocalQueue"}
    for result in results.values():
        worker_lqs = {(o["metadata"]["namespace"], o["metadata"]["name"])
                      for o in result["manifests"]["kueue"] if o["kind"] == "LocalQueue"}
        assert manager_lqs <= worker_lqs
    # The manager runs no pods: its flavor selects no node.
    assert [f["spec"] for f in by_kind(objects, "ResourceFlavor").values()] == [{}]


def test_multikueue_objects_as_kueue_documents_them(example):
    _spec, manager, _results = example
    objects = render_multikueue.manager_objects(manager)
    check = by_kind(objects, "AdmissionCheck")["gpushare-multikueue"]
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    assert check["spec"]["parameters"] == {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                           "name": "gpushare-multikueue"}
    assert by_kind(objects, "MultiKueueConfig")["gpushare-multikueue"]["spec"]["clusters"] == ["site-a", "site-b"]
    clusters = by_kind(objects, "MultiKueueCluster")
    assert sorted(clusters) == ["site-a", "site-b"]
    assert clusters["site-b"]["spec"]["clusterSource"]["kubeConfig"] == {"locationType": "Secret",
                                                                         "location": "gpushare-multikueue-site-b"}


@pytest.fixture(scope="module", name="schemas")
def fixture_schemas() -> dict:
    run = subprocess.run(["bash", str(KUEUE_CRDS)], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("%s failed (exit %d):\n%s" % (KUEUE_CRDS, run.returncode, run.stderr), pytrace=False)
    crds = Path(run.stdout.strip())
    out = {}
    for kind, plural in CRD_FILES.items():
        crd = yaml.safe_load((crds / ("kueue.x-k8s.io_%s.yaml" % plural)).read_text())
        out[kind] = go_patterns(next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"])
    return out


def go_patterns(node):
    """Go's regexp takes a flag after ^ ("^(?i)..."); Python's wants global flags first."""
    if isinstance(node, dict):
        return {k: (v.replace("^(?i)", "(?i)^", 1) if k == "pattern" and isinstance(v, str) else go_patterns(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [go_patterns(v) for v in node]
    return node


def test_every_manager_object_passes_the_kueue_crd_schema(example, schemas):
    _spec, manager, _results = example
    objects = render_multikueue.manager_objects(manager) + manager["kueue"]["objects"]
    assert {o["kind"] for o in objects} == set(CRD_FILES)
    for obj in objects:
        jsonschema.validate({k: v for k, v in obj.items() if k != "metadata"}, schemas[obj["kind"]])
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpushare.cluster"


def test_a_worker_removed_from_the_inventory_leaves_the_config_and_the_quota():
    variables, groups = inventories.load_clusters()
    variables = copy.deepcopy(variables)
    variables["gpushare_multikueue"]["workers"] = variables["gpushare_multikueue"]["workers"][:1]
    _spec, manager, _results = plan_all(variables, groups)
    objects = render_multikueue.manager_objects(manager)
    assert by_kind(objects, "MultiKueueConfig")["gpushare-multikueue"]["spec"]["clusters"] == ["site-a"]
    assert sorted(by_kind(objects, "MultiKueueCluster")) == ["site-a"]
    assert gpu_quota(by_kind(manager["kueue"]["objects"], "ClusterQueue")["training"]) == 2


def test_worker_lost_timeout_reaches_kueues_configuration(example):
    _spec, manager, _results = example
    assert manager["kueue"]["configuration"]["multiKueue"] == {"workerLostTimeout": "15m"}


def test_kubeconfig_secret_embeds_server_ca_and_token():
    token = {"data": {"token": base64.b64encode(b"sa-token").decode(), "ca.crt": base64.b64encode(b"CA").decode()}}
    admin = {"current-context": "a", "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
             "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority": "/x"}}]}
    secret = render_multikueue.kubeconfig_secret(token, {"name": "site-b", "server": None, "context": None}, admin)
    assert secret["metadata"] == {"name": "gpushare-multikueue-site-b", "namespace": "kueue-system",
                                  "labels": {"app.kubernetes.io/managed-by": "gpushare.cluster"}}
    config = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    assert config["clusters"][0]["cluster"] == {"server": "https://10.0.0.1:6443",
                                                "certificate-authority-data": base64.b64encode(b"CA").decode()}
    assert config["users"][0]["user"] == {"token": "sa-token"}
    assert config["contexts"][0]["context"]["cluster"] == config["clusters"][0]["name"]
    # The inventory's server wins over the kubeconfig's.
    other = render_multikueue.kubeconfig_secret(token, {"name": "site-b", "server": "https://site-b:6443"}, admin)
    assert yaml.safe_load(base64.b64decode(other["data"]["kubeconfig"]))["clusters"][0]["cluster"]["server"] == \
        "https://site-b:6443"
    with pytest.raises(ValueError, match="no token"):
        render_multikueue.kubeconfig_secret({"data": {}}, {"name": "site-b"}, admin)


def test_worker_access_covers_jobs_and_workloads():
    objects = render_multikueue.worker_access_objects()
    role = next(o for o in objects if o["kind"] == "ClusterRole")

    def allowed(group, resource, verb):
        return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in role["rules"])

    for verb in ("create", "delete", "get", "list", "watch"):
        assert allowed("batch", "jobs", verb) and allowed("kueue.x-k8s.io", "workloads", verb)
        assert allowed("", "pods", verb) and allowed("apps", "statefulsets", verb)
    assert allowed("kueue.x-k8s.io", "workloads/status", "update")
    binding = next(o for o in objects if o["kind"] == "ClusterRoleBinding")
    account = next(o for o in objects if o["kind"] == "ServiceAccount")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": "kueue-system"}]
    token = next(o for o in objects if o["kind"] == "Secret")
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": account["metadata"]["name"]}


# --- bad input: every problem names the path, the value and the fix ----------------------------

def edited(edit) -> tuple[dict, dict]:
    variables, groups = inventories.load_clusters()
    variables = copy.deepcopy(variables)
    edit(variables["gpushare_multikueue"])
    return variables, groups


def test_a_cluster_listed_twice():
    variables, groups = edited(lambda mk: mk["workers"].append(dict(mk["workers"][0])))
    assert problems_of(variables, groups) == [
        "gpushare_multikueue.workers[2].name: cluster site-a is listed twice (also gpushare_multikueue.workers[0]) "
        "(got 'site-a'); allowed: each worker cluster once. Remove one of the entries, or give this cluster a name "
        "of its own"]


def test_the_same_cluster_under_another_name():
    def edit(mk):
        mk["workers"][1]["kubeconfig"] = mk["workers"][0]["kubeconfig"]
        mk["workers"][1]["group"] = "site_b"
    variables, groups = edited(edit)
    (problem,) = problems_of(variables, groups)
    assert problem.startswith("gpushare_multikueue.workers[1].kubeconfig: is the cluster site-a again")


@pytest.mark.parametrize("same", ["name", "kubeconfig"])
def test_a_manager_that_is_also_a_worker(same):
    variables, groups = edited(lambda mk: mk["manager"].update({same: mk["workers"][1][same]}))
    (problem,) = problems_of(variables, groups)
    assert problem.startswith("gpushare_multikueue.manager.%s: the manager is also a worker "
                              "(gpushare_multikueue.workers[1])" % same)
    assert "Kueue's manager cannot be its own worker" in problem


def test_a_worker_group_that_is_not_in_the_inventory():
    variables, groups = edited(lambda mk: mk["workers"][1].update(group="site_c"))
    assert problems_of(variables, groups) == [
        "gpushare_multikueue.workers[1].group: is no inventory group with hosts (got 'site_c'); allowed: site_a, "
        "site_b. Put the cluster's GPU servers in this group (each with a gpushare_node), or name its group"]


def test_a_worker_without_the_teams_namespace():
    variables, groups = inventories.load_clusters()
    site_b = worker_variables(variables, groups, "site_b")
    site_b["gpushare_teams"] = copy.deepcopy(site_b["gpushare_teams"])
    site_b["gpushare_teams"][1]["namespaces"] = ["research-b"]
    with pytest.raises(PlanInvalid) as err:
        plan_all(variables, groups, worker_vars={"site-b": site_b})
    assert [str(p) for p in err.value.problems] == [
        "gpushare_multikueue.workers[1] (group site_b): team research has no namespace research on this worker "
        "(got ['research-b']); allowed: every namespace of gpushare_teams[1].namespaces. Kueue needs the same "
        "namespaces and LocalQueue names on every worker: add the namespace to the team in this group's "
        "gpushare_teams, or remove it from the manager's"]


def test_a_worker_without_the_team():
    variables, groups = inventories.load_clusters()
    site_a = worker_variables(variables, groups, "site_a")
    site_a["gpushare_teams"] = site_a["gpushare_teams"][:1]
    for gpu in site_a["gpushare_nodes"]["a-gpu01"]["gpus"]:
        gpu["team"] = "training"
    with pytest.raises(PlanInvalid) as err:
        plan_all(variables, groups, worker_vars={"site-a": site_a})
    (problem,) = [str(p) for p in err.value.problems]
    assert problem.startswith("gpushare_multikueue.workers[0] (group site_a): has no team research (got ['training'])")


def test_bad_values_are_named():
    def edit(mk):
        mk["worker_lost_timeout"] = "15 minutes"
        mk["workers"][0]["server"] = "http://192.0.2.20:6443"
        mk["workers"][1]["name"] = "Site_B"
    variables, groups = edited(edit)
    problems = problems_of(variables, groups)
    assert [p.split(":")[0] for p in problems] == ["gpushare_multikueue.workers[0].server",
                                                   "gpushare_multikueue.workers[1].name",
                                                   "gpushare_multikueue.worker_lost_timeout"]
    assert "(got 'Site_B')" in problems[1] and "(got '15 minutes')" in problems[2]


def test_the_plan_is_json(example):
    _spec, manager, _results = example
    assert json.loads(json.dumps(manager)) == manager


def test_the_managers_team_namespaces_are_governed_as_a_workers():
    """Teams submit on the manager, so its namespaces carry the team's Pod Security level and
    the GPU policy counts as a GPU every resource any worker advertises: with site-b's GPU 1
    cut into two 3g.71gb slices, the device plugin's mixed-strategy name nvidia.com/mig-3g.71gb
    (NVIDIA's resource naming) is one, though site-a has no MIG."""
    variables, groups = inventories.load_clusters()
    variables = copy.deepcopy(variables)
    variables["gpushare_nodes"]["b-gpu01"]["gpus"][1] = {"index": 1, "mode": "mig", "team": "research",
                                                         "mig_layout": {"3g.71gb": 2}}
    _spec, manager, _results = plan_all(variables, groups)
    objects = render_manifests.namespace_objects(manager)
    namespaces = by_kind(objects, "Namespace")
    assert sorted(namespaces) == ["research", "training"]
    for ns in namespaces.values():
        # The inventory sets no pod_security: restricted, Kubernetes' Pod Security label.
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (gpu_policy,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy" and
                     any(v["name"] == "gpuResources" for v in o["spec"].get("variables", []))]
    (resources,) = [json.loads(v["expression"]) for v in gpu_policy["spec"]["variables"] if v["name"] == "gpuResources"]
    assert set(resources) == {"nvidia.com/gpu", "nvidia.com/mig-3g.71gb"}
