"""Every Kueue object passes the v0.19 CRD schemas, their CEL rules and the webhook's rules,
and the quotas say what the design promises (production reclaims at once, nothing else
can evict production, quota sums equal what exists)."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners import kueue_quotas
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

from inventories import EXAMPLE_NAMES, ROOT, example_day, load_example

# Prints config/components/crd/bases of the Go module sigs.k8s.io/kueue at the version the
# twin runs (tests/twin/versions.sh), downloading the module into the twin's cache.
KUEUE_CRDS = ROOT / "tests" / "twin" / "kueue-crds.sh"
KINDS = {kind: "kueue.x-k8s.io_%s.yaml" % plural for kind, plural in {
    "ClusterQueue": "clusterqueues", "Cohort": "cohorts", "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors", "WorkloadPriorityClass": "workloadpriorityclasses"}.items()}
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _schema(crds: Path, kind: str) -> dict:
    crd = yaml.safe_load((crds / KINDS[kind]).read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    assert version["served"] and version["storage"]
    return version["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module", name="schemas")
def fixture_schemas() -> dict:
    """The v1beta2 schema of each kind, from the real Kueue release. No Go or no module proxy
    is a failure, not a skip: without the CRDs nothing here is checked."""
    run = subprocess.run(["bash", str(KUEUE_CRDS)], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("%s failed (exit %d); the Kueue CRDs come from the Go module sigs.k8s.io/kueue, "
                    "so Go and a Go module proxy are needed:\n%s" % (KUEUE_CRDS, run.returncode, run.stderr),
                    pytrace=False)
    crds = Path(run.stdout.strip())
    return {kind: _schema(crds, kind) for kind in KINDS}


def kueue_objects(name: str) -> list[dict]:
    plan = build_plan(load_example(name))
    objects = list(plan["kueue"]["objects"])
    for window in plan["windows"]:
        objects += window["kueue"]["objects"]
    return objects


def quantity(value) -> float:
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"(\d+)(Gi|Mi|Ki)?", value)
    return int(match.group(1)) * {"Gi": 2 ** 30, "Mi": 2 ** 20, "Ki": 2 ** 10, None: 1}[match.group(2)]


def cel_rules(obj: dict) -> list[str]:
    """The CRD's x-kubernetes-validations for ClusterQueue, written out in Python."""
    spec = obj["spec"]
    broken = []
    if not spec.get("cohortName"):
        if any("borrowingLimit" in r for g in spec["resourceGroups"] for f in g["flavors"] for r in f["resources"]):
            broken.append("borrowingLimit must be nil when cohort is empty")
    fungibility = spec.get("flavorFungibility", {})
    if "preference" in fungibility and not (fungibility.get("whenCanBorrow") == "TryNextFlavor"
                                            and fungibility.get("whenCanPreempt") == "TryNextFlavor"):
        broken.append("preference needs TryNextFlavor")
    preemption = spec.get("preemption", {})
    if preemption.get("reclaimWithinCohort", "Never") == "Never" and \
            preemption.get("borrowWithinCohort", {}).get("policy", "Never") != "Never":
        broken.append("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    for g in spec["resourceGroups"]:
        if any(len(f["resources"]) != len(g["coveredResources"]) for f in g["flavors"]):
            broken.append("flavors must have the same number of resources as the coveredResources")
    return broken


def webhook_rules(obj: dict) -> list[str]:
    """kueue v0.19.2 pkg/webhooks/clusterqueue_webhook.go: validateResourceGroups and the size limits."""
    groups = obj["spec"]["resourceGroups"]
    broken = []
    seen_resources, seen_flavors = set(), set()
    pairs = 0
    for g in groups:
        for resource in g["coveredResources"]:
            if resource in seen_resources:
                broken.append("resource %s in two groups" % resource)
            seen_resources.add(resource)
            if not LABEL_KEY.match(resource):
                broken.append("resource name %s is not a label key" % resource)
        for f in g["flavors"]:
            if f["name"] in seen_flavors:
                broken.append("flavor %s in two groups" % f["name"])
            seen_flavors.add(f["name"])
            if [r["name"] for r in f["resources"]] != g["coveredResources"]:
                broken.append("flavor %s resources out of coveredResources order" % f["name"])
            for r in f["resources"]:
                pairs += 1
                for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if key in r and quantity(r[key]) < 0:
                        broken.append("negative %s" % key)
                if "lendingLimit" in r and quantity(r["lendingLimit"]) > quantity(r["nominalQuota"]):
                    broken.append("lendingLimit above nominalQuota")
                if ("lendingLimit" in r or "borrowingLimit" in r) and not obj["spec"].get("cohortName"):
                    broken.append("limits without a cohort")
        if len(g["flavors"]) * len(g["coveredResources"]) > 512:
            broken.append("more than 512 flavor x resource pairs in a group")
    if len(groups) > 16 or len(seen_flavors) > 256 or len(seen_resources) > 256:
        broken.append("size limits")
    return broken


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_kueue_object_passes_the_crd_schema_and_rules(example, schemas):
    objects = kueue_objects(example)
    kinds = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    assert {o["kind"] for o in objects} >= kinds
    for obj in objects:
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        body = {k: v for k, v in obj.items() if k != "metadata"}
        jsonschema.validate(body, schemas[obj["kind"]])
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpushare.cluster"
        if obj["kind"] == "ClusterQueue":
            assert cel_rules(obj) == [] and webhook_rules(obj) == []


def test_the_validator_catches_what_the_api_server_would_refuse(schemas):
    queue = next(o for o in kueue_objects("four-gpu-server") if o["kind"] == "ClusterQueue")
    bad = yaml.safe_load(yaml.safe_dump(queue))
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"].reverse()
    bad["spec"]["resourceGroups"][0]["coveredResources"].append("nvidia.com/extra")
    assert cel_rules(bad) and webhook_rules(bad)
    bad = yaml.safe_load(yaml.safe_dump(queue))
    bad["spec"]["preemption"] = {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
    assert cel_rules(bad)
    bad["spec"]["preemption"] = {"reclaimWithinCohort": "Sometimes"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in bad.items() if k != "metadata"}, schemas["ClusterQueue"])
    bad = yaml.safe_load(yaml.safe_dump(queue))
    bad["spec"]["cohort"] = "v1beta1-field"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k: v for k, v in bad.items() if k != "metadata"},
                            dict(schemas["ClusterQueue"], additionalProperties=False,
                                 properties=dict(schemas["ClusterQueue"]["properties"], spec=dict(
                                     schemas["ClusterQueue"]["properties"]["spec"], additionalProperties=False))))


def by_kind(objects, kind):
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def nominal(queue) -> dict:
    out = {}
    for g in queue["spec"]["resourceGroups"]:
        for f in g["flavors"]:
            for r in f["resources"]:
                out[(f["name"], r["name"])] = r
    return out


def test_production_reclaims_at_once_and_nobody_evicts_production():
    queues = by_kind(build_plan(example_day())["kueue"]["objects"], "ClusterQueue")
    prod = queues["production"]["spec"]["preemption"]
    assert prod["reclaimWithinCohort"] == "Any"
    assert prod["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 500}
    for name in ("data-science", "training"):
        assert queues[name]["spec"]["preemption"]["reclaimWithinCohort"] == "LowerPriority"
    # Production does not borrow, so none of its workloads is ever a reclaim target.
    assert all(r.get("borrowingLimit") == 0 for r in nominal(queues["production"]).values())


def test_quota_is_what_each_team_owns_and_sums_to_what_exists():
    plan = build_plan(example_day())
    queues = by_kind(plan["kueue"]["objects"], "ClusterQueue")
    quota = {name: {k: r["nominalQuota"] for k, r in nominal(q).items() if r["nominalQuota"]}
             for name, q in queues.items()}
    assert quota["production"] == {("h200-141gb-whole", "nvidia.com/gpu"): 1,
                                   ("h200-141gb-mig", "nvidia.com/mig-1g.18gb"): 2,
                                   ("h200-141gb-mig", "nvidia.com/mig-1g.35gb"): 1,
                                   ("h200-141gb-mig", "nvidia.com/mig-4g.71gb"): 1}
    assert quota["data-science"] == {("h200-141gb-shared", "nvidia.com/mig-7g.141gb.shared"): 5}
    assert quota["training"] == {("h200-141gb-whole", "nvidia.com/gpu"): 1}
    advertised = plan["nodes"][0]["advertised"]
    totals = defaultdict(int)
    for q in quota.values():
        for (_flavor, resource), n in q.items():
            totals[resource] += n
    assert dict(totals) == advertised


def test_every_queue_covers_every_pool_so_it_can_borrow():
    queues = by_kind(build_plan(example_day())["kueue"]["objects"], "ClusterQueue")
    keys = {name: set(nominal(q)) for name, q in queues.items()}
    assert keys["production"] == keys["training"] == keys["data-science"]


def test_the_night_window_gives_gpu3_to_the_data_team_whole_so_training_can_borrow_it():
    plan = build_plan(example_day())
    night = plan["windows"][0]
    assert night["name"] == "night" and (night["from"], night["until"]) == ("19:00", "07:00")
    queues = by_kind(night["kueue"]["objects"], "ClusterQueue")
    ds = nominal(queues["data-science"])
    assert ds[("h200-141gb-whole", "nvidia.com/gpu")]["nominalQuota"] == 1
    assert ("h200-141gb-shared", "nvidia.com/mig-7g.141gb.shared") not in ds
    node = night["nodes"][0]
    assert node["labels"]["nvidia.com/mig.config"] == node["mig_config"]["name"] != plan["nodes"][0]["mig_config"]["name"]
    assert node["advertised"]["nvidia.com/gpu"] == 3
    assert "sharing" not in node["device_plugin_config"]["config"]


def test_namespace_selector_matches_only_the_teams_namespaces():
    queues = by_kind(kueue_objects("mixed-fleet"), "ClusterQueue")
    selector = queues["production"]["spec"]["namespaceSelector"]
    assert selector == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                              "values": ["prod-api", "prod-batch"]}]}
    local = [o for o in kueue_objects("mixed-fleet") if o["kind"] == "LocalQueue"]
    assert {(o["metadata"]["namespace"], o["spec"]["clusterQueue"]) for o in local} >= {
        ("prod-api", "production"), ("prod-batch", "production"), ("research", "research")}


def test_lending_and_borrowing_limits_come_from_policy():
    queues = by_kind(kueue_objects("mixed-fleet"), "ClusterQueue")
    prod = nominal(queues["production"])[("a100-80gb-whole", "nvidia.com/gpu")]
    assert prod["nominalQuota"] == 2 and prod["lendingLimit"] == 1 and prod["borrowingLimit"] == 0
    research = nominal(queues["research"])
    assert all(r["borrowingLimit"] == 8 for (f, res), r in research.items() if res not in ("cpu", "memory"))


def test_cpu_and_memory_are_either_uncovered_or_proportional():
    day = build_plan(example_day())
    assert day["kueue"]["configuration"]["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared"
    assert not any("cpu" in g["coveredResources"] for q in by_kind(day["kueue"]["objects"], "ClusterQueue").values()
                   for g in q["spec"]["resourceGroups"])
    fleet = build_plan(load_example("mixed-fleet"))
    assert "quotaCheckStrategy" not in fleet["kueue"]["configuration"].get("resources", {})
    queues = by_kind(fleet["kueue"]["objects"], "ClusterQueue")
    cohort = by_kind(fleet["kueue"]["objects"], "Cohort")["fleet"]
    cpus = sum(nominal(q)[(kueue_quotas.CPU_MEMORY_FLAVOR, "cpu")]["nominalQuota"] for q in queues.values())
    pooled = next(r["nominalQuota"] for g in cohort["spec"]["resourceGroups"] for f in g["flavors"]
                  for r in f["resources"] if r["name"] == "cpu")
    assert cpus + pooled <= 128 + 128 + 64 + 192
    assert cpus + pooled >= 128 + 128 + 64 + 192 - len(queues) - 1


def test_dra_quota_is_mapped_to_the_nvidia_device_class():
    config = build_plan(load_example("mixed-fleet"))["kueue"]["configuration"]
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "gpushare.cluster/dra-gpu", "deviceClassNames": ["gpu.nvidia.com"]}]
    assert "kubeflow.org/pytorchjob" in config["integrations"]["frameworks"]
