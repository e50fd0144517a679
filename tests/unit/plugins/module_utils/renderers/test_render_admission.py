# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission objects of every example inventory: their shapes, the namespaces, queues,
GPU resources and priority classes they name (each derived here another way: the inventory
files as written, the LocalQueues of the rendered Kueue manifest, what the GPU Operator's
ConfigMaps make nodes advertise), and what their CEL refuses, asked of tests/unit/cel_subset.py
(the real apiserver answers on the twin, tests/twin/test_enforcement.py). The expected
answers are the issue's rules (docs/security.md), written out per request."""

from __future__ import annotations

import copy
import inspect
import json
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import manifest_files, render
from cel_subset import admit, identifiers, parse
from inventories import EXAMPLE_NAMES, EXAMPLES, ROOT, example_day, load_example
from test_advertised_from_manifests import states

PLANS = {name: build_plan(load_example(name)) for name in EXAMPLE_NAMES}
ADMISSION_KINDS = ("PriorityClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"


def teams_as_written(example: str) -> list[dict]:
    return yaml.safe_load((EXAMPLES / example / "group_vars" / "all" / "teams.yml").read_text())["gpushare_teams"]


def admission(example: str) -> dict:
    """kind/name -> object, from the rendered 00-namespaces.yaml."""
    files = {f["path"]: f["content"] for f in manifest_files(PLANS[example])}
    return {"%s/%s" % (o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(files["00-namespaces.yaml"])
            if o["kind"] in ADMISSION_KINDS}


def literal(policy: dict, variable: str):
    """A variable of the policy that is a literal, read as YAML (JSON is YAML)."""
    return yaml.safe_load(next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == variable))


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_objects_and_bindings(example):
    objects = admission(example)
    written = teams_as_written(example)
    team_namespaces = sorted(ns for t in written for ns in t.get("namespaces", [t["name"]]))
    policies = [o for o in objects.values() if o["kind"] == "ValidatingAdmissionPolicy"]
    assert sorted(p["metadata"]["name"] for p in policies) == ["gpushare-gpu-through-kueue", "gpushare-team-priority"]
    for policy in policies:
        binding = objects["ValidatingAdmissionPolicyBinding/" + policy["metadata"]["name"]]
        assert binding["apiVersion"] == policy["apiVersion"] == "admissionregistration.k8s.io/v1"
        assert binding["spec"]["policyName"] == policy["metadata"]["name"]
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert binding["spec"]["matchResources"]["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": team_namespaces}]}
        assert policy["spec"]["failurePolicy"] == "Fail"
        assert policy["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpushare.cluster"}
        defined = [v["name"] for v in policy["spec"]["variables"]]
        for i, var in enumerate(policy["spec"]["variables"]):
            assert identifiers(parse(var["expression"])) <= set(defined[:i]), var["name"]
        for check in policy["spec"]["validations"]:
            for key in ("expression", "messageExpression"):
                if key in check:
                    assert identifiers(parse(check[key])) <= set(defined), check[key]
    production = [t for t in written if t.get("production")]
    if production:
        pc = objects["PriorityClass/gpushare-production"]
        assert (pc["apiVersion"], pc["value"], pc["globalDefault"]) == ("scheduling.k8s.io/v1", production[0]["priority"], False)
    else:
        assert "PriorityClass/gpushare-production" not in objects


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_pod_security_labels_as_the_inventory_says(example):
    want = {ns: t.get("pod_security", "restricted") for t in teams_as_written(example)
            for ns in t.get("namespaces", [t["name"]])}
    found = {o["metadata"]["name"]: o["metadata"]["labels"] for o in render(PLANS[example])["namespaces"]
             if o["kind"] == "Namespace"}
    assert set(found) == set(want)
    for ns, level in want.items():
        for mode in ("enforce", "warn", "audit"):
            assert found[ns]["pod-security.kubernetes.io/" + mode] == level, (ns, mode)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_gpu_policy_names_what_the_nodes_advertise_and_each_namespace_queue(example):
    policy = admission(example)["ValidatingAdmissionPolicy/gpushare-gpu-through-kueue"]
    by_configmaps = sorted({r for _state, _node, found, _plan in states(example) for r in found})
    assert literal(policy, "gpuResources") == by_configmaps
    kueue = render(PLANS[example])["kueue"]
    assert literal(policy, "queues") == {o["metadata"]["namespace"]: o["metadata"]["name"] for o in kueue
                                         if o["kind"] == "LocalQueue"}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_priority_classes_per_namespace(example):
    """Own class, and other non-production teams' classes not above the team's priority."""
    written = teams_as_written(example)
    priority = {t["name"]: t.get("priority", 1000 if t.get("production") else 100) for t in written}
    production = {t["name"] for t in written if t.get("production")}
    want = {}
    for t in written:
        mine = priority[t["name"]]
        for ns in t.get("namespaces", [t["name"]]):
            want[ns] = sorted(n for n in priority if n == t["name"] or (n not in production and priority[n] <= mine))
    policy = admission(example)["ValidatingAdmissionPolicy/gpushare-team-priority"]
    assert literal(policy, "allowedClasses") == want


# --- what the CEL refuses (the example day: production/prod-serving, data-science, training) ---

OBJECTS = admission("four-gpu-server")
GPU_POLICY = (OBJECTS["ValidatingAdmissionPolicy/gpushare-gpu-through-kueue"],
              OBJECTS["ValidatingAdmissionPolicyBinding/gpushare-gpu-through-kueue"])
PRIORITY_POLICY = (OBJECTS["ValidatingAdmissionPolicy/gpushare-team-priority"],
                   OBJECTS["ValidatingAdmissionPolicyBinding/gpushare-team-priority"])


def pod(ns="training", requests=None, labels=None, init=False, **spec) -> dict:
    container = {"name": "main", "image": "app:1"}
    if requests:
        container["resources"] = {"limits": dict(requests)}
    body = {"containers": [{"name": "side", "image": "side:1"}], "initContainers": []}
    body["initContainers" if init else "containers"].append(container)
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns, "labels": labels or {}},
            "spec": body}


def job(ns="training", requests=None, labels=None, **spec) -> dict:
    template = pod(ns, requests, **spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": ns, "labels": labels or {}},
            "spec": {"template": {"spec": template["spec"]}}}


def gpu_refusals(obj, **request):
    if obj["kind"] == "Job":
        request.setdefault("group", "batch")
    return no_errors(admit(*GPU_POLICY, obj, **request))


def no_errors(refusals):
    """A refusal is a rule's, never an expression that failed on a well-formed object."""
    assert not [r for r in refusals if r.startswith("error:")], refusals
    return refusals


def queue(name):
    return {"kueue.x-k8s.io/queue-name": name}


@pytest.mark.parametrize("requests", [{"nvidia.com/gpu": 1}, {"nvidia.com/mig-1g.18gb": 1},
                                      {"nvidia.com/mig-7g.141gb.shared": 1}, {"nvidia.com/gpu.shared": 2},
                                      {"nvidia.com/mig-3g.71gb": 1}])  # the last two: no node advertises them
def test_gpu_only_through_the_namespace_queue(requests):
    for make in (pod, job):
        refusal = gpu_refusals(make("training", requests))
        assert refusal and "kueue.x-k8s.io/queue-name: training" in refusal[0], refusal
        assert gpu_refusals(make("training", requests, queue("production")))
        assert gpu_refusals(make("training", requests, queue("training"))) == []
        assert gpu_refusals(make("prod-serving", requests, queue("production"))) == []
        # Not a team namespace: the binding does not select it.
        assert gpu_refusals(make("kube-system", requests)) == []
    assert gpu_refusals(pod("training", requests, init=True))
    bare = pod("training", requests)
    del bare["spec"]["initContainers"], bare["metadata"]["labels"]
    assert gpu_refusals(bare)


def test_no_gpu_needs_no_label_and_dra_claims_do():
    assert gpu_refusals(pod("training", {"cpu": "2", "memory": "1Gi"})) == []
    claim = {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "big"}]}
    assert gpu_refusals(pod("training", **claim))
    assert gpu_refusals(job("training", **claim))
    assert gpu_refusals(pod("training", labels=queue("training"), **claim)) == []


def test_a_job_pods_come_from_the_job_controller():
    owned = pod("training", {"nvidia.com/gpu": 1})
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u",
                                             "controller": True}]
    assert gpu_refusals(owned, username=JOB_CONTROLLER) == []
    assert gpu_refusals(owned, username="system:kube-controller-manager") == []
    # A member writing the same owner reference is no Job controller.
    assert gpu_refusals(owned, username="alice")
    assert gpu_refusals(pod("training", {"nvidia.com/gpu": 1}), username=JOB_CONTROLLER)


def test_nvidia_runtime_and_visible_devices_env():
    for runtime in ("nvidia", "nvidia-cdi", "nvidia-legacy"):
        assert gpu_refusals(pod("training", labels=queue("training"), runtimeClassName=runtime)), runtime
    assert gpu_refusals(pod("training", runtimeClassName="gvisor")) == []
    env = pod("training", labels=queue("training"))
    env["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    assert gpu_refusals(env) and "NVIDIA_VISIBLE_DEVICES" in gpu_refusals(env)[0]
    assert gpu_refusals(job("prod-serving", labels=queue("production"), initContainers=env["spec"]["containers"]))
    debug = pod("training")
    debug["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "busybox", "env": env["spec"]["containers"][0]["env"]}]
    assert gpu_refusals(debug, operation="UPDATE", resource="pods/ephemeralcontainers", old=pod("training"))
    # Other env and other updates are no business of the policy.
    env["spec"]["containers"][0]["env"] = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]
    assert gpu_refusals(env) == []
    assert gpu_refusals(pod("training", {"nvidia.com/gpu": 1}), operation="UPDATE") == []


def priority_refusals(obj, **request):
    request.setdefault("group", {"Pod": "", "Job": "batch", "CronJob": "batch"}.get(obj["kind"], "apps"))
    return no_errors(admit(*PRIORITY_POLICY, obj, **request))


def with_class(obj, name):
    obj = copy.deepcopy(obj)
    obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = name
    return obj


def test_workload_priority_class_belongs_to_the_team():
    # training (100) may use only its own; data-science (500) its own and training's;
    # production every class.
    allowed = {"training": {"training"}, "data-science": {"data-science", "training"},
               "prod-serving": {"production", "data-science", "training"}}
    for ns, mine in allowed.items():
        for wpc in ("production", "data-science", "training", "made-up"):
            for make in (pod, job):
                refusal = priority_refusals(with_class(make(ns), wpc))
                assert (refusal == []) == (wpc in mine), (ns, wpc, refusal)
    refusal = priority_refusals(with_class(job("training"), "production"))
    assert refusal[0] == "WorkloadPriorityClass production is not for namespace training: it may use training"
    # Any kind Kueue manages: a Deployment with production's class.
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "training",
                                                                              "labels": {}},
                  "spec": {"template": {"spec": pod()["spec"]}}}
    assert priority_refusals(with_class(deployment, "production"))


def test_workload_priority_class_kept_on_update_refused_when_changed():
    before = with_class(job("training"), "production")
    assert priority_refusals(before, operation="UPDATE", old=before) == []
    assert priority_refusals(with_class(job("training"), "production"), operation="UPDATE",
                             old=with_class(job("training"), "training"))
    assert priority_refusals(with_class(job("training"), "production"), operation="UPDATE", old=job("training"))


def test_system_and_production_pod_priority_classes():
    for ns in ("training", "data-science", "prod-serving"):
        for system in ("system-cluster-critical", "system-node-critical"):
            assert priority_refusals(pod(ns, priorityClassName=system)), (ns, system)
            assert priority_refusals(job(ns, priorityClassName=system)), (ns, system)
    assert priority_refusals(pod("prod-serving", priorityClassName="gpushare-production")) == []
    assert priority_refusals(job("prod-serving", priorityClassName="gpushare-production")) == []
    for ns in ("training", "data-science"):
        refusal = priority_refusals(pod(ns, priorityClassName="gpushare-production"))
        assert refusal == ["PriorityClass gpushare-production is production's: only for pods in prod-serving"], refusal
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "training", "labels": {}},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": pod(priorityClassName="system-node-critical")["spec"]}}}}}
    assert priority_refusals(cron)
    assert priority_refusals(pod("training", priorityClassName="batch-low")) == []
    # A pod that already had the class (it predates the policy) can still be updated (finalized).
    old = pod("training", priorityClassName="system-cluster-critical")
    assert priority_refusals(old, operation="UPDATE", old=old) == []


def test_objects_without_labels_or_spec_pass():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "training"}, "data": {}}
    assert priority_refusals(config_map, group="") == []
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "training"}}
    assert priority_refusals(event, group="") == []
    # A custom resource with a spec.template of another shape, or none.
    for template in ("a string", {"metadata": {}}, None):
        custom = {"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "training"},
                  "spec": {"template": template}}
        assert priority_refusals(custom, group="example.com") == []


def test_production_class_stays_production_even_for_a_team_of_equal_priority():
    variables = example_day()
    training = next(t for t in variables["gpushare_teams"] if t["name"] == "training")
    training["priority"] = 1000     # production's own value
    plan = build_plan(variables)
    policy = next(o for o in render(plan)["namespaces"] if o["metadata"]["name"] == "gpushare-team-priority"
                  and o["kind"] == "ValidatingAdmissionPolicy")
    assert literal(policy, "allowedClasses")["training"] == ["data-science", "training"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_report_names_each_pod_security_exception(example):
    from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_report import report_markdown
    report = report_markdown(PLANS[example])
    for t in teams_as_written(example):
        for ns in t.get("namespaces", [t["name"]]):
            named = "`%s` (team %s): baseline" % (ns, t["name"]) in report
            assert named == (t.get("pod_security") == "baseline"), (ns, report)


# --- cel_subset against cel-go -------------------------------------------------------------

def test_cel_subset_answers_as_cel_go(monkeypatch):
    """Every request the tests above make, judged again by cel-go at the version of the
    twin's kube-apiserver (tests/twin/celcheck.sh): the same refusals, message for message."""
    run = subprocess.run(["bash", str(ROOT / "tests" / "twin" / "celcheck.sh")], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        pytest.fail("tests/twin/celcheck.sh failed; cel-go is built from its Go module, so Go and a module proxy "
                    "are needed:\n%s" % run.stderr, pytrace=False)
    cases, answers = [], []
    evaluate = admit

    def recording(policy, binding, obj, **request):
        refusals = evaluate(policy, binding, obj, **request)
        resource = request.get("resource") or obj["kind"].lower() + "s"
        namespace = obj["metadata"].get("namespace")
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        selected = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
        if namespace in selected and any(resource in r["resources"] or ("*" in r["resources"] and "/" not in resource)
                                         for r in rules):
            cases.append(copy.deepcopy({"policy": policy, "object": obj, "oldObject": request.get("old"), "request": {
                "operation": request.get("operation", "CREATE"), "namespace": namespace,
                "userInfo": {"username": request.get("username", "alice")}}}))
            answers.append(refusals)
        return refusals

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "admit", recording)
    for name, test in sorted(vars(module).items()):
        if name.startswith("test_") and name != "test_cel_subset_answers_as_cel_go" and callable(test):
            params = inspect.signature(test).parameters
            if "requests" in params:
                for requests in ({"nvidia.com/gpu": 1}, {"nvidia.com/mig-1g.18gb": 1}, {"nvidia.com/gpu.shared": 2}):
                    test(requests)
            elif not params:
                test()
    assert len(cases) > 50 and sum(1 for a in answers if a) > 20, (len(cases), answers)
    by_cel_go = json.loads(subprocess.run([run.stdout.strip()], input=json.dumps(cases), capture_output=True, text=True,
                                          check=True).stdout)
    for case, ours, theirs in zip(cases, answers, by_cel_go):
        assert ours == theirs, (case["object"], case["request"])
