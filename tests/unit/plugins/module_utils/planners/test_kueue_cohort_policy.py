# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kueue objects for a small fleet written out in full by hand, from the policy in
kueue_quotas' docstring and Kueue v1beta2's field names (site/content/en/docs/concepts:
cluster_queue.md "Lending limit", "Borrowing limit", "Preemption"; configuration
``resources.quotaCheckStrategy`` and ``deviceClassMappings``).

The fleet: production ``prod`` (priority 1000) owns 4 H200; ``research`` (100) owns 2 H200, 3
L40S and two 3g.71gb slices, lends at most 3 whole GPUs, borrows at most 2; ``interns`` (50)
own 1 L40S and neither lend nor borrow; 1 H200 belongs to no team (the cohort's).
"""

from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils import names
from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import Policy, Team
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.kueue_quotas import Capacity, plan_kueue

GPU, MIG3G = "nvidia.com/gpu", "nvidia.com/mig-3g.71gb"


def _team(name, priority, production=False, lend=True, borrow=True, lending_limit=None, borrowing_limit=None):
    return Team(name=name, namespaces=(name + "-b", name + "-a"), priority=priority, production=production,
                lend=lend, borrow=borrow, borrowing_limit=borrowing_limit, lending_limit=lending_limit,
                members=(), path="gpushare_teams[%s]" % name)


TEAMS = (_team("prod", 1000, production=True), _team("research", 100, lending_limit=3, borrowing_limit=2),
         _team("interns", 50, lend=False, borrow=False))
POLICY = Policy(cluster_name="c", distribution="kubeadm", cohort="lab", mig_leftover="largest",
                cpu_memory_quota="ignore", allow_disruption=False, timezone="UTC")
CAPACITIES = [
    Capacity("h200-whole", GPU, "prod", 4),
    Capacity("h200-whole", GPU, "research", 1),
    Capacity("h200-whole", GPU, "research", 1),     # two lines of one pool add up
    Capacity("h200-whole", GPU, None, 1),
    Capacity("l40s-whole", GPU, "research", 3),
    Capacity("l40s-whole", GPU, "interns", 1),
    Capacity("h200-mig", MIG3G, "research", 2),
]
LABELS = {"h200-whole": {"m": "h200", "k": "whole"}, "l40s-whole": {"m": "l40s"}, "h200-mig": {"m": "h200", "k": "mig"}}


def _plan(cpu_memory=None, dra=False):
    return plan_kueue(TEAMS, POLICY, CAPACITIES, cpu_memory or {}, LABELS, dra)


def _objects(plan, kind):
    return {o["metadata"]["name"]: o for o in plan["objects"] if o["kind"] == kind}


def _quota(name, nominal, **limits):
    return dict({"name": name, "nominalQuota": nominal}, **limits)


def test_research_lends_its_3_gpus_from_the_biggest_pool_and_borrows_at_most_2():
    spec = _objects(_plan(), "ClusterQueue")["research"]["spec"]
    # lending_limit 3 over its whole-GPU pools, biggest first: all 3 L40S, none of its 2 H200.
    # The slices are not whole GPUs: no lendingLimit there.
    assert spec["resourceGroups"] == [
        {"coveredResources": [GPU], "flavors": [
            {"name": "h200-whole", "resources": [_quota(GPU, 2, borrowingLimit=2, lendingLimit=0)]},
            {"name": "l40s-whole", "resources": [_quota(GPU, 3, borrowingLimit=2, lendingLimit=3)]}]},
        {"coveredResources": [MIG3G], "flavors": [
            {"name": "h200-mig", "resources": [_quota(MIG3G, 2, borrowingLimit=2)]}]},
    ]
    assert spec["preemption"] == {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"}
    assert spec["cohortName"] == "lab"
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research-a", "research-b"]}]}


def test_a_team_that_neither_lends_nor_borrows_has_both_limits_zero_on_every_gpu_pool():
    spec = _objects(_plan(), "ClusterQueue")["interns"]["spec"]
    assert spec["resourceGroups"] == [
        {"coveredResources": [GPU], "flavors": [
            {"name": "h200-whole", "resources": [_quota(GPU, 0, borrowingLimit=0, lendingLimit=0)]},
            {"name": "l40s-whole", "resources": [_quota(GPU, 1, borrowingLimit=0, lendingLimit=0)]}]},
        {"coveredResources": [MIG3G], "flavors": [
            {"name": "h200-mig", "resources": [_quota(MIG3G, 0, borrowingLimit=0, lendingLimit=0)]}]},
    ]


def test_production_reclaims_at_once_and_preempts_borrowers_up_to_the_top_other_priority():
    spec = _objects(_plan(), "ClusterQueue")["prod"]["spec"]
    # No limits in policy: no limit fields at all.
    assert spec["resourceGroups"][0]["flavors"] == [
        {"name": "h200-whole", "resources": [_quota(GPU, 4)]},
        {"name": "l40s-whole", "resources": [_quota(GPU, 0)]}]
    # The highest priority of the other teams is research's 100.
    assert spec["preemption"] == {"reclaimWithinCohort": "Any",
                                  "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
                                  "withinClusterQueue": "LowerPriority"}
    assert _plan()["production_team"] == "prod"


def test_the_cohort_owns_the_gpu_no_team_owns_and_the_priorities_are_the_teams():
    plan = _plan()
    cohort = _objects(plan, "Cohort")["lab"]
    assert cohort["spec"]["resourceGroups"] == [
        {"coveredResources": [GPU], "flavors": [
            {"name": "h200-whole", "resources": [_quota(GPU, 1)]},
            {"name": "l40s-whole", "resources": [_quota(GPU, 0)]}]},
        {"coveredResources": [MIG3G], "flavors": [{"name": "h200-mig", "resources": [_quota(MIG3G, 0)]}]},
    ]
    assert {n: o["value"] for n, o in _objects(plan, "WorkloadPriorityClass").items()} == \
        {"prod": 1000, "research": 100, "interns": 50}
    flavors = _objects(plan, "ResourceFlavor")
    assert sorted(flavors) == ["h200-mig", "h200-whole", "l40s-whole"]
    assert flavors["h200-whole"]["spec"] == {"nodeLabels": {"k": "whole", "m": "h200"},
                                             "tolerations": [names.GPU_TOLERATION]}
    # A LocalQueue is named after its team in each of the team's namespaces.
    assert sorted((o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"])
                  for o in plan["objects"] if o["kind"] == "LocalQueue") == [
        ("interns-a", "interns", "interns"), ("interns-b", "interns", "interns"), ("prod-a", "prod", "prod"),
        ("prod-b", "prod", "prod"), ("research-a", "research", "research"), ("research-b", "research", "research")]
    assert plan["configuration"]["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}


def test_a_cohort_that_owns_nothing_declares_no_resource_groups():
    plan = plan_kueue(TEAMS, POLICY, [c for c in CAPACITIES if c.team], {}, LABELS, False)
    assert _objects(plan, "Cohort")["lab"]["spec"] == {}


def test_cpu_and_memory_come_first_without_limits_and_quota_checks_every_resource():
    plan = _plan(cpu_memory={"prod": (32, 256), "research": (16, 128), None: (8, 64)}, dra=True)
    groups = _objects(plan, "ClusterQueue")["research"]["spec"]["resourceGroups"]
    assert groups[0] == {"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "cpu-memory", "resources": [_quota("cpu", 16), _quota("memory", "128Gi")]}]}
    assert _objects(plan, "ResourceFlavor")["cpu-memory"]["spec"] == {}
    cohort_groups = _objects(plan, "Cohort")["lab"]["spec"]["resourceGroups"]
    assert cohort_groups[0]["flavors"][0]["resources"] == [_quota("cpu", 8), _quota("memory", "64Gi")]
    interns = _objects(plan, "ClusterQueue")["interns"]["spec"]["resourceGroups"][0]
    assert interns["flavors"][0]["resources"] == [_quota("cpu", 0), _quota("memory", "0Gi")]
    # CPU and memory covered: no IgnoreUndeclared; DRA: its resource maps to NVIDIA's device class.
    assert plan["configuration"]["resources"] == {
        "deviceClassMappings": [{"name": names.DRA_RESOURCE, "deviceClassNames": ["gpu.nvidia.com"]}]}


def test_without_a_production_team_nobody_reclaims_with_any():
    teams = TEAMS[1:]
    plan = plan_kueue(teams, POLICY, [c for c in CAPACITIES if c.team != "prod"], {}, LABELS, False)
    assert plan["production_team"] is None
    assert all(q["spec"]["preemption"]["reclaimWithinCohort"] == "LowerPriority"
               for q in _objects(plan, "ClusterQueue").values())


def test_priority_classes_carry_kueue_fields_only():
    for priority_class in _objects(_plan(), "WorkloadPriorityClass").values():
        assert sorted(priority_class) == ["apiVersion", "description", "kind", "metadata", "value"]


def test_a_production_team_alone_preempts_no_borrower_above_priority_0():
    # No other team: no borrower priority to protect, and the threshold stays an integer (the CRD's type).
    plan = plan_kueue(TEAMS[:1], POLICY, [c for c in CAPACITIES if c.team == "prod"], {}, LABELS, False)
    borrow = _objects(plan, "ClusterQueue")["prod"]["spec"]["preemption"]["borrowWithinCohort"]
    assert borrow == {"policy": "LowerPriority", "maxPriorityThreshold": 0}


def test_a_team_lends_only_from_pools_it_owns():
    # vision may lend 1 GPU and owns 1 L40S: it lends that one, and nothing of the H200 pool it does not own.
    teams = (TEAMS[0], _team("vision", 10, lending_limit=1))
    capacities = [Capacity("h200-whole", GPU, "prod", 4), Capacity("l40s-whole", GPU, "vision", 1)]
    plan = plan_kueue(teams, POLICY, capacities, {}, LABELS, False)
    assert _objects(plan, "ClusterQueue")["vision"]["spec"]["resourceGroups"] == [
        {"coveredResources": [GPU], "flavors": [
            {"name": "h200-whole", "resources": [_quota(GPU, 0, lendingLimit=0)]},
            {"name": "l40s-whole", "resources": [_quota(GPU, 1, lendingLimit=1)]}]}]


def test_the_manager_configuration_is_kueues_v1beta2_configuration():
    config = _plan()["configuration"]
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert {"batch/job", "pod", "kubeflow.org/pytorchjob"} <= set(config["integrations"]["frameworks"])


def test_kueue_holds_the_workloads_without_a_queue_in_the_teams_namespaces_only():
    # Kueue's configuration docs: manageJobsWithoutQueueName takes every job without a queue label,
    # managedJobsNamespaceSelector limits that to the namespaces it matches (here the six namespaces
    # of the three teams, written out by hand, sorted; kube-system and the operators' stay out).
    config = _plan()["configuration"]
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "In",
        "values": ["interns-a", "interns-b", "prod-a", "prod-b", "research-a", "research-b"]}]}


def test_without_team_namespaces_kueue_leaves_jobs_without_a_queue_alone():
    config = plan_kueue((), POLICY, CAPACITIES, {}, LABELS, False)["configuration"]
    assert "manageJobsWithoutQueueName" not in config and "managedJobsNamespaceSelector" not in config
