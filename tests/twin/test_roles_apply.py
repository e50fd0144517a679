"""The kueue role applied to the twin with kubernetes.core, as on a real cluster.

playbooks/site.yml runs the plan play and the GPU stack roles (kueue_install: false,
the twin runs Kueue as a process) against the twin's kubeconfig. The objects must be
accepted by the apiserver and Kueue's webhooks, the ClusterQueues become Active, a second
run changes nothing, and a team that leaves the inventory loses its Kueue objects (prune).
"""
from __future__ import annotations

from ansible_collections.gpushare.cluster.plugins.module_utils.renderers.render_manifests import render
from twinclient import ApiError, is_true

import pytest

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


def test_objects_accepted_and_queues_active(twin_session, roles_apply, example_plan):
    assert roles_apply["first"]["counts"]["failed"] == 0
    for obj in example_plan["kueue"]["objects"]:
        kind, meta = obj["kind"], obj["metadata"]
        plural = {"WorkloadPriorityClass": "workloadpriorityclasses"}.get(kind, kind.lower() + "s")
        path = (f"{KUEUE}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
                if meta.get("namespace") else f"{KUEUE}/{plural}/{meta['name']}")
        live = twin_session.get(path)
        assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpushare.cluster"
        if kind in ("ClusterQueue", "LocalQueue"):
            assert is_true(live, "Active"), (path, live.get("status"))
    for team in example_plan["teams"]:
        for ns in team["namespaces"]:
            twin_session.get(f"/api/v1/namespaces/{ns}")


def test_second_run_changes_nothing(roles_apply):
    assert roles_apply["second"]["counts"]["changed"] == 0, roles_apply["second"]["stdout"][-4000:]


def test_team_removed_from_inventory_is_pruned(twin_session, roles_apply):
    assert roles_apply["extra_cluster_queue"]["metadata"]["name"] == "research"
    assert roles_apply["first"]["counts"]["changed"] > 0
    for path in (f"{KUEUE}/clusterqueues/research",
                 f"{KUEUE}/namespaces/research/localqueues/research",
                 f"{KUEUE}/workloadpriorityclasses/research"):
        with pytest.raises(ApiError) as err:
            twin_session.get(path)
        assert err.value.status == 404, path
    # Namespaces are never pruned: they hold the team's workloads.
    twin_session.get("/api/v1/namespaces/research")


def test_gpu_operator_objects_applied(twin_session, roles_apply, example_plan):
    """The gpu_operator role (gpu_operator_install: false): namespace, the two ConfigMaps
    holding every state's configs, and the node labels of the base state."""
    ns = twin_session.get("/api/v1/namespaces/gpu-operator")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    for cm in render(example_plan)["gpu_operator"]:
        live = twin_session.get(f"/api/v1/namespaces/gpu-operator/configmaps/{cm['metadata']['name']}")
        assert live["data"] == cm["data"]
        assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpushare.cluster"
    night = next(w for w in example_plan["windows"] if w["name"] == "night")["nodes"][0]["mig_config"]["name"]
    assert night in render(example_plan)["gpu_operator"][0]["data"]["config.yaml"]
