"""gpushare.cluster.k8s_apply against the twin's real API server (and Kueue): what it writes,
what it reports as changed, check mode, merge patches and refusals. What was stored is read
back from the API server, not from the task's result."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from twinclient import ApiError, is_true, state_dir

MANAGER = "gpushare-k8s-apply-test"


def run_task(tmp_path: Path, args: dict, check: bool = False) -> dict:
    """One gpushare.cluster.k8s_apply task through ansible-playbook; its registered result."""
    out = tmp_path / "result.json"
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "apply", "gpushare.cluster.k8s_apply": dict(args, kubeconfig=str(state_dir() / "admin.kubeconfig")),
         "register": "applied", "ignore_errors": True},
        {"name": "keep the result", "ansible.builtin.copy": {"content": "{{ applied | to_json }}", "dest": str(out)},
         "check_mode": False}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
           "-e", "ansible_python_interpreter=%s" % sys.executable]
    proc = subprocess.run(cmd + (["--check"] if check else []), cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def configmap(ns: str, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}, "data": data}


def namespace(ns: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": "a"}}}


@pytest.fixture
def ns(twin_session, request):
    """A namespace name of this test's own (a deleted one stays Terminating for a while)."""
    name = "k8s-apply-%s" % request.node.name.split("_")[2]
    yield name
    for path in ("/api/v1/namespaces/%s" % name, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/k8s-apply-test"):
        try:
            twin_session.delete(path)
        except ApiError:
            pass


def test_new_objects_change_and_the_same_again_does_not(twin_session, ns, tmp_path):
    first = run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "1"})]})
    assert first["changed"] is True
    assert first["changed_objects"] == ["Namespace//%s" % ns, "ConfigMap/%s/c" % ns]
    stored = twin_session.get("/api/v1/namespaces/%s/configmaps/c" % ns)
    assert stored["data"] == {"a": "1"}
    managers = {(f["manager"], f["operation"]) for f in stored["metadata"]["managedFields"]}
    assert (MANAGER, "Apply") in managers
    again = run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "1"})]})
    assert again["changed"] is False and again["changed_objects"] == []
    assert twin_session.get("/api/v1/namespaces/%s/configmaps/c" % ns)["metadata"]["resourceVersion"] == \
        stored["metadata"]["resourceVersion"]


def test_check_mode_reports_the_change_and_stores_nothing(twin_session, ns, tmp_path):
    run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "1"})]})
    checked = run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "2"})]}, check=True)
    assert checked["changed_objects"] == ["ConfigMap/%s/c" % ns]
    assert twin_session.get("/api/v1/namespaces/%s/configmaps/c" % ns)["data"] == {"a": "1"}


def test_a_field_no_longer_applied_is_removed(twin_session, ns, tmp_path):
    run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "1", "b": "2"})]})
    dropped = run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), configmap(ns, {"a": "1"})]})
    assert dropped["changed_objects"] == ["ConfigMap/%s/c" % ns]
    assert twin_session.get("/api/v1/namespaces/%s/configmaps/c" % ns)["data"] == {"a": "1"}


def test_a_status_written_by_kueue_is_not_a_change(twin_session, ns, tmp_path):
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "k8s-apply-test"},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
              {"name": "k8s-apply-test", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]}}
    assert run_task(tmp_path, {"field_manager": MANAGER, "definition": [cq]})["changed"] is True
    path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/k8s-apply-test"
    # Kueue writes the status (Active False: the flavor does not exist) on its own.
    twin_session.wait_for("Kueue's status on the ClusterQueue", lambda: (twin_session.get(path).get("status") or {}).get("conditions"))
    assert not is_true(twin_session.get(path), "Active")
    again = run_task(tmp_path, {"field_manager": MANAGER, "definition": [cq]})
    assert again["changed"] is False, again
    bigger = json.loads(json.dumps(cq))
    bigger["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 2
    assert run_task(tmp_path, {"field_manager": MANAGER, "definition": [bigger]})["changed_objects"] == \
        ["ClusterQueue//k8s-apply-test"]
    assert str(twin_session.get(path)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]) == "2"


def test_a_merge_patch_sets_and_deletes_labels_and_needs_the_object(twin_session, ns, tmp_path):
    run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns)]})
    patched = run_task(tmp_path, {"merge_patch": True, "definition": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": None, "window": "night"}}}]})
    assert patched["changed_objects"] == ["Namespace//%s" % ns]
    labels = twin_session.get("/api/v1/namespaces/%s" % ns)["metadata"]["labels"]
    assert labels.get("window") == "night" and "team" not in labels
    missing = run_task(tmp_path, {"merge_patch": True, "definition": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "k8s-apply-no-such", "labels": {"a": "b"}}}]})
    assert missing["failed"] and "Patching Namespace//k8s-apply-no-such" in missing["msg"] and "not found" in missing["msg"]
    with pytest.raises(ApiError):
        twin_session.get("/api/v1/namespaces/k8s-apply-no-such")


def test_a_refused_object_is_named_with_the_servers_words(twin_session, ns, tmp_path):
    bad = configmap(ns, {"a": "1"})
    bad["metadata"]["name"] = "Not_A_Name"
    refused = run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), bad]})
    assert refused["failed"]
    assert "Applying ConfigMap/%s/Not_A_Name" % ns in refused["msg"]
    assert "RFC 1123" in refused["msg"]      # the API server's validation message
    assert refused["changed_objects"] == ["Namespace//%s" % ns]


def test_nothing_is_written_when_an_object_is_being_deleted(twin_session, ns, tmp_path):
    held = configmap(ns, {"a": "1"})
    held["metadata"]["finalizers"] = ["example.com/hold"]
    run_task(tmp_path, {"field_manager": MANAGER, "definition": [namespace(ns), held]})
    path = "/api/v1/namespaces/%s/configmaps/c" % ns
    twin_session.delete(path)           # the finalizer keeps it, with a deletionTimestamp
    assert twin_session.get(path)["metadata"].get("deletionTimestamp")
    other = dict(configmap(ns, {"b": "2"}), metadata={"name": "other", "namespace": ns})
    refused = run_task(tmp_path, {"field_manager": MANAGER, "deleting_hint": "Wait for it.",
                                  "definition": [namespace(ns), other, configmap(ns, {"a": "2"})]})
    assert refused["failed"] and refused["deleting"] == ["ConfigMap/%s/c" % ns]
    assert refused["msg"] == ("The plan applies ConfigMap/%s/c, which the cluster is deleting: nothing was written. "
                              "Wait for it." % ns)
    with pytest.raises(ApiError):      # the object before it in the list was not written either
        twin_session.get("/api/v1/namespaces/%s/configmaps/other" % ns)
    assert twin_session.get(path)["data"] == {"a": "1"}
    twin_session.request("PATCH", path, {"metadata": {"finalizers": None}},
                         content_type="application/merge-patch+json")
