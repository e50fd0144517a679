"""playbooks/site.yml's GPU stack play against the twin, as users run it, with the real charts
that can be had here.

- Kueue from its own chart (``charts/kueue`` of the sigs.k8s.io/kueue v0.19.2 module), installed
  by the kueue role with ``kubernetes.core.helm`` and the Helm v4 client the twin builds from
  ``helm.sh/helm/v4``; KWOK runs its pods. The Kueue that admits workloads stays the twin's
  process (no container runs here); the chart's webhook configurations and CRD conversion point
  at the Service ``kueue-webhook-service``, which the twin has no network for, so a stand-in
  (ServiceNetwork) rewrites those references to the twin Kueue's URL, as the cluster network
  and Kueue's certificate injection would make them reachable in a real cluster.
- Monitoring with the prometheus-operator CRDs (v0.85.0 module) and the chart install off
  (monitoring_install: false): namespace, Grafana Secret, PrometheusRule, dashboards.
- gpu_operator and dra_driver with their installs off (their charts cannot be had here).
- Two runs: the second changes nothing (changed=0, release revision 1).
- Labels the Plan drops are removed: a DRA node moved back to the device plugin loses
  nvidia.com/gpu.deploy.device-plugin=false.
"""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import gpu_nodes
from conftest import NO_INSTALL, ROOT, TWIN_BIN, site_playbook, twin_inventory, write_results
from twinclient import ApiError, is_true, state_dir

SHARE = TWIN_BIN.parent / "share"
KUEUE_CHART = SHARE / "charts" / "kueue"
PROMETHEUS_CRDS = SHARE / "prometheus-operator" / "crds"
WEBHOOK_SERVICE = ("kueue-system", "kueue-webhook-service")
RESULTS: dict = {}


class ServiceNetwork(gpu_nodes.Reconciler):
    """Stand-in for what makes the chart's Kueue webhooks reachable in a real cluster
    (kube-proxy, and the CA bundle Kueue's certificate manager injects): every webhook
    configuration naming the Service kueue-system/kueue-webhook-service is
    rewritten to the twin Kueue's URL with the twin's CA (webhook configurations only)."""

    KINDS = ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
             "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations")

    name = "service network"

    def __init__(self, twin, interval: float = 0.2):
        super().__init__(twin, interval)
        self.url = twin.env["TWIN_KUEUE_WEBHOOK"].rstrip("/")
        self.ca = base64.b64encode(Path(twin.env["TWIN_CA"]).read_bytes()).decode()
        self.rewritten: list[str] = []

    def _route(self, client_config: dict) -> bool:
        service = client_config.get("service")
        if not service or (service.get("namespace"), service.get("name")) != WEBHOOK_SERVICE:
            return False
        client_config.clear()
        client_config.update({"url": self.url + service.get("path", "/"), "caBundle": self.ca})
        return True

    def sync(self) -> None:
        for kind in self.KINDS:
            for obj in self.twin.get(kind)["items"]:
                routed = [self._route(h["clientConfig"]) for h in obj.get("webhooks") or []]   # every hook, no short cut
                if any(routed):
                    self.twin.request("PUT", f"{kind}/{obj['metadata']['name']}?fieldManager=twin-service-network", obj)
                    self.rewritten.append(obj["metadata"]["name"])
        # CRD conversion stays on the Service: every client here reads the storage version
        # (v1beta2), so nothing is converted, and Helm's server-side apply would otherwise meet
        # both a url and a service.


WEBHOOK_NAMES = ("kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration")


def restore_twin_webhooks(twin) -> None:
    """Puts the twin's own Kueue webhook configurations back in place of the chart's. The chart's
    select only the namespaces of the plan it was installed with (its managedJobsNamespaceSelector);
    the tests after this one apply other inventories (mixed-fleet) without installing the chart
    again, as a real cluster never would, and without Kueue's defaulting there (suspend, the pod
    gate) the Plan's admission policies rightly refuse their workloads."""
    for kind, name in zip(ServiceNetwork.KINDS, WEBHOOK_NAMES):
        twin.request("DELETE", f"{kind}/{name}", ok=(200, 202, 404))
    kubectl("apply", "--server-side", "--field-manager", "gpushare-twin", "-f",
            str(state_dir() / "config" / "kueue-webhooks.yaml"))


def adopt_into_release(release: str = "kueue", namespace: str = "kueue-system") -> list:
    """Hands the objects the twin made that the chart also renders (CRDs, ClusterRoles, a
    RoleBinding) over to the release, as ``helm --take-ownership`` would: kubernetes.core.helm
    6.2.0 passes ``take_ownership`` only when upgrading, not on the first install. Helm's
    ownership label and annotations, and the chart's version of each object applied
    server-side as field manager ``helm`` (the name Helm 4 applies with), so Helm's own apply
    meets no conflict with the twin's field manager. Returns the objects handed over."""
    rendered = subprocess.run([str(TWIN_BIN / "helm"), "template", release, str(KUEUE_CHART), "-n", namespace],
                              capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    manifests = state_dir() / "kueue-chart-rendered.yaml"
    manifests.write_text(yaml.safe_dump_all(docs))
    existing = json.loads(kubectl("get", "-f", str(manifests), "--ignore-not-found", "-o", "json") or '{"items": []}')
    keys = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", "")) for o in existing.get("items", [])}
    owned = [d for d in docs if (d["kind"], d["metadata"]["name"],
                                 d["metadata"].get("namespace", "") if d["kind"] not in CLUSTER_KINDS else "") in keys]
    for d in owned:
        d["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "Helm"
        d["metadata"].setdefault("annotations", {}).update({"meta.helm.sh/release-name": release,
                                                            "meta.helm.sh/release-namespace": namespace})
    if owned:
        handover = state_dir() / "kueue-chart-handover.yaml"
        handover.write_text(yaml.safe_dump_all(owned))
        kubectl("apply", "--server-side", "--force-conflicts", "--field-manager", "helm", "-f", str(handover))
    return sorted("%s/%s" % (d["kind"], d["metadata"]["name"]) for d in owned)


CLUSTER_KINDS = ("CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                 "ValidatingWebhookConfiguration", "APIService")


def kubectl(*args: str) -> str:
    env_file = state_dir() / "admin.kubeconfig"
    return subprocess.run([str(TWIN_BIN / "kubectl"), "--kubeconfig", str(env_file), *args],
                          capture_output=True, text=True, check=True, timeout=300).stdout


# The kueue role installs the chart from the module's copy; everything else as a user sets it.
CHART_VARS = {
    "kueue_install": True,
    "kueue_chart_ref": str(KUEUE_CHART),
    "kueue_chart_repo_url": "",
    "kueue_chart_version": "0.19.2",
    "kueue_helm_wait_timeout": "3m",
    # The twin's Kueue process already made the CRDs, RBAC and webhook configurations.
    "kueue_helm_take_ownership": True,
    # KWOK nodes carry this taint; the controller pod must tolerate it to be scheduled.
    "kueue_values_overrides": {"controllerManager": {"tolerations": [
        {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]}},
    "kueue_wait_delay": 1,
    "kueue_wait_retries": 60,
    "gpu_operator_install": False,
    "dra_driver_install": False,
    "monitoring_install": False,
    "gpu_operator_mig_wait_delay": 1,
    "gpu_operator_mig_wait_retries": 60,
}
STACK = ["monitoring", "gpu_operator", "dra_driver", "kueue"]


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def helm_v4_shim(directory: Path) -> Path:
    """A ``helm`` on PATH in front of the twin's: kubernetes.core.helm 6.2.0 reads the release
    after an install with ``helm list --all``, a flag Helm v4 removed ("unknown flag: --all");
    Helm v4's ``list`` without it lists every release state the module looks for. Every other
    call goes to Helm v4.3.2 unchanged."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "helm"
    shim.write_text("#!/bin/sh\n# kubernetes.core 6.2.0 -> Helm v4: drop `list --all` (see test_site.py)\n"
                    "if [ \"$1\" = list ]; then\n  for a in \"$@\"; do shift; [ \"$a\" = --all ] || set -- \"$@\" \"$a\"; done\nfi\n"
                    "exec %s \"$@\"\n" % (TWIN_BIN / "helm"))
    shim.chmod(0o755)
    return directory


@pytest.fixture(scope="module")
def site_runs(tmp_path_factory, twin_session, operator_sim, monkeypatch_module):
    """site.yml's GPU stack twice, with the Kueue chart installed and the prometheus-operator
    CRDs present; the base state (08:00) that roles_apply left, so only the installs change."""
    for path in (KUEUE_CHART / "Chart.yaml", TWIN_BIN / "helm", PROMETHEUS_CRDS):
        assert path.exists(), f"{path} missing: run tests/twin/build.sh helm kueue-chart prometheus-crds"
    kubectl("apply", "--server-side", "--field-manager", "gpushare-twin", "-f", str(PROMETHEUS_CRDS))
    kubectl("wait", "--for", "condition=established", "--timeout", "120s", "-f", str(PROMETHEUS_CRDS))
    inv = twin_inventory(tmp_path_factory, "site", extra_vars=CHART_VARS)
    # The release creates the webhook configurations itself (same names as the twin's, which
    # point at a URL; a Service reference merged into them would be invalid).
    for kind, name in zip(ServiceNetwork.KINDS, WEBHOOK_NAMES):
        twin_session.delete(f"{kind}/{name}")
    shim = helm_v4_shim(tmp_path_factory.mktemp("helm-shim"))
    monkeypatch_module.setenv("GPUSHARE_TWIN_PATH_PREFIX", str(shim))
    network = ServiceNetwork(twin_session).start()
    adopted = adopt_into_release()
    try:
        first = site_playbook(inv, STACK, {}, at="08:00")
        second = site_playbook(inv, STACK, {}, at="08:00")
    finally:
        network.stop()
        restore_twin_webhooks(twin_session)
    RESULTS["site_first_s"], RESULTS["site_second_s"] = first["seconds"], second["seconds"]
    RESULTS["site_second_counts"] = second["counts"]
    return {"first": first, "second": second, "rewritten": sorted(set(network.rewritten)), "inventory": inv,
            "adopted": adopted}


def test_site_installs_the_kueue_chart_and_changes_nothing_the_second_time(twin_session, site_runs):
    assert site_runs["first"]["counts"]["failed"] == 0
    assert site_runs["first"]["counts"]["changed"] > 0
    # The second run changes nothing: no task reports a change, the release stays at
    # revision 1 (checked below) and the helm task itself reports no change.
    assert site_runs["second"]["counts"]["failed"] == 0
    assert site_runs["second"]["counts"]["changed"] == 0, changed_tasks(site_runs["second"]["stdout"])
    helm_task = site_runs["second"]["stdout"].split("TASK [gpushare.cluster.kueue : Apply | Kueue with Helm]", 1)[1]
    assert helm_task.split("TASK [", 1)[0].strip().splitlines()[-1].startswith("ok: [localhost]"), helm_task[:2000]
    releases = json.loads(subprocess.run(
        [str(TWIN_BIN / "helm"), "--kubeconfig", str(state_dir() / "admin.kubeconfig"), "list", "-n", "kueue-system",
         "-o", "json"], capture_output=True, text=True, check=True).stdout)
    (release,) = [r for r in releases if r["name"] == "kueue"]
    assert release["chart"] == "kueue-0.19.2" and release["status"] == "deployed" and release["revision"] == "1"
    # Installed with our values: the Plan's manager configuration is the chart's ConfigMap.
    config = twin_session.get("/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config")["data"]
    assert "quotaCheckStrategy: IgnoreUndeclared" in config["controller_manager_config.yaml"]
    deployment = twin_session.get("/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager")
    assert is_true(deployment, "Available")
    pods = twin_session.get("/api/v1/namespaces/kueue-system/pods?labelSelector=control-plane%3Dcontroller-manager")["items"]
    assert pods and all(p["status"]["phase"] == "Running" for p in pods), [p["status"] for p in pods]
    assert "kueue-mutating-webhook-configuration" in site_runs["rewritten"]


def changed_tasks(stdout: str) -> list[str]:
    """The TASK headers of an ansible-playbook output whose hosts reported changed."""
    return [block.split("]", 1)[0] for block in stdout.split("TASK [")[1:] if "\nchanged: " in block]


def test_monitoring_objects_applied_with_the_prometheus_operator_crds(twin_session, site_runs):
    ns = "/api/v1/namespaces/monitoring"
    secret = twin_session.get(f"{ns}/secrets/gpushare-grafana-admin")
    assert base64.b64decode(secret["data"]["admin-user"]) == b"admin"
    assert len(base64.b64decode(secret["data"]["admin-password"])) == 32
    rules = twin_session.get("/apis/monitoring.coreos.com/v1/namespaces/monitoring/prometheusrules")["items"]
    assert any(r["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "gpushare.cluster" for r in rules)
    dashboards = twin_session.get(f"{ns}/configmaps?labelSelector=grafana_dashboard%3D1")["items"]
    assert dashboards
    # Kueue's ServiceMonitor: the chart's, enabled because the CRD is there (kueue_enable_prometheus: auto).
    monitors = twin_session.get("/apis/monitoring.coreos.com/v1/namespaces/kueue-system/servicemonitors")["items"]
    assert monitors
    # The password was generated into the inventory's artifacts directory (0600).
    password_file = state_dir() / "artifacts" / "four-gpu-server" / "secrets" / "grafana-admin-password"
    assert password_file.stat().st_mode & 0o777 == 0o600


def test_queues_still_admit_after_the_chart_install(twin_session, site_runs, example_plan):
    """The chart's webhooks (rewritten to the twin's Kueue) accept the Plan's objects."""
    for obj in example_plan["kueue"]["objects"]:
        if obj["kind"] == "ClusterQueue":
            live = twin_session.get(f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{obj['metadata']['name']}")
            assert is_true(live, "Active"), live.get("status")


DRA_INVENTORY = ROOT / "tests" / "twin" / "inventory-dra"


def test_labels_the_plan_drops_are_removed(tmp_path_factory, twin_session):
    """dra-l4-01 given back to the device plugin (dra: false) loses the DRA labels the Plan set
    (nvidia.com/gpu.deploy.device-plugin=false would keep its GPUs from the device plugin)."""
    from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan  # noqa: E402
    from inventories import load_dir  # noqa: E402

    inv = tmp_path_factory.mktemp("relabel") / "inventory-dra"
    shutil.copytree(DRA_INVENTORY, inv)
    missing = gpu_nodes_needed(twin_session, build_plan(load_dir(inv)))
    if missing:
        gpu_nodes.create_nodes(twin_session, {"nodes": missing})
    site_playbook(inv, ["gpu_operator"], NO_INSTALL, at=None)
    labels = twin_session.get("/api/v1/nodes/dra-l4-01")["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels["nvidia.com/dra-kubelet-plugin"] == "true"
    host = inv / "host_vars" / "dra-l4-01.yml"
    host.write_text(host.read_text().replace("dra: true", "dra: false"))
    moved = site_playbook(inv, ["gpu_operator"], NO_INSTALL, at=None)
    labels = twin_session.get("/api/v1/nodes/dra-l4-01")["metadata"]["labels"]
    assert "nvidia.com/gpu.deploy.device-plugin" not in labels, labels
    assert "nvidia.com/dra-kubelet-plugin" not in labels, labels
    assert labels["nvidia.com/device-plugin.config"] == "gpushare-dra-l4-01"
    again = site_playbook(inv, ["gpu_operator"], NO_INSTALL, at=None)
    assert again["counts"]["changed"] == 0, again["stdout"][-4000:]
    RESULTS["relabel_run_s"] = moved["seconds"]


def gpu_nodes_needed(twin, plan: dict) -> list:
    """The plan's node states whose Node does not exist in the twin yet."""
    missing = []
    for state in plan["nodes"]:
        try:
            twin.get(gpu_nodes.node_path(state["name"]))
        except ApiError as err:
            assert err.status == 404
            missing.append(state)
    return missing


def test_zz_results():
    write_results("site", RESULTS)
