"""gpushare.cluster.mig_wait against the twin's API server: it returns as soon as every node
named reports nvidia.com/mig.config.state success or failed, and fails naming the nodes still
pending when the time is up. The states are written here, by hand, as the MIG Manager would."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from twinclient import ApiError, state_dir

STATE = "nvidia.com/mig.config.state"
NODES = ("mig-wait-a", "mig-wait-b")


def wait(tmp_path: Path, nodes: list, retries: int, delay: float) -> tuple[dict, float]:
    """One gpushare.cluster.mig_wait task through ansible-playbook; its result and seconds."""
    out = tmp_path / "result.json"
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "wait", "register": "waited", "ignore_errors": True, "gpushare.cluster.mig_wait": {
            "nodes": nodes, "retries": retries, "delay": delay, "kubeconfig": str(state_dir() / "admin.kubeconfig")}},
        {"name": "keep the result", "ansible.builtin.copy": {"content": "{{ waited | to_json }}", "dest": str(out)}}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    env_python = "ansible_python_interpreter=%s" % sys.executable
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
           "-e", env_python]
    began = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), time.monotonic() - began


def set_state(twin, node: str, state: str) -> None:
    twin.request("PATCH", "/api/v1/nodes/%s" % node, {"metadata": {"labels": {STATE: state}}},
                 content_type="application/merge-patch+json")


@pytest.fixture
def nodes(twin_session):
    for name in NODES:
        try:
            twin_session.delete("/api/v1/nodes/%s" % name)
        except ApiError:
            pass
        twin_session.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                              "metadata": {"name": name, "labels": {STATE: "pending"}}})
    yield twin_session
    for name in NODES:
        twin_session.delete("/api/v1/nodes/%s" % name)


def test_returns_at_the_first_look_when_every_node_has_reported(nodes, tmp_path):
    set_state(nodes, "mig-wait-a", "success")
    set_state(nodes, "mig-wait-b", "failed")
    result, _seconds = wait(tmp_path, list(NODES), retries=30, delay=10)
    assert not result.get("failed") and result["attempts"] == 1
    assert result["pending"] == [] and result["failed_nodes"] == ["mig-wait-b"]


def test_a_report_a_second_later_is_seen_within_a_fraction_of_the_delay(nodes, tmp_path):
    set_state(nodes, "mig-wait-b", "success")
    reported = threading.Timer(1.0, set_state, (nodes, "mig-wait-a", "success"))
    reported.start()
    result, seconds = wait(tmp_path, list(NODES), retries=30, delay=10)
    reported.join()
    assert not result.get("failed") and result["pending"] == [] and result["failed_nodes"] == []
    assert result["attempts"] >= 2
    # Looks 0.1, 0.2, 0.4, 0.8 s apart: seen by 1.5 s after the report, not at the next 10 s look.
    assert seconds < 8, seconds


def test_nodes_still_pending_at_the_end_are_named(nodes, tmp_path):
    set_state(nodes, "mig-wait-b", "success")
    result, _seconds = wait(tmp_path, list(NODES), retries=3, delay=0.5)
    assert result["failed"] and result["pending"] == ["mig-wait-a"]
    assert "The MIG Manager has not reported on mig-wait-a within 1.0 s" in result["msg"]
