# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MPS as an advised mode, and the calibration it cites.

Usage from ``usage_synth.l40s_fleet`` (each pod's memory and activity constant, given by the
generator); the expected clients per card are worked out here by hand from that truth and the
L40S's memory (46068 MiB, nvidia-smi's memory.total, the catalogue's source); the measured
figures come from the H200 run in tests/fixtures/sharing-modes-h200.json, read directly."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import usage_synth
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import calibration, render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua
from ansible_collections.gpushare.cluster.plugins.module_utils.planners.plan import build_plan

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "sharing-modes-h200.json"
L40S_MIB = 46068
HEADROOM = 1.2            # Settings.memory_headroom 0.2: need = peak x 1.2

TEAMS = [{"name": "production", "namespaces": ["prod-serving"], "production": True, "priority": 1000,
          "lend": True, "borrow": False},
         {"name": "data-science", "namespaces": ["data-science"], "priority": 500, "lend": True, "borrow": True},
         {"name": "training", "namespaces": ["training"], "priority": 100, "lend": True, "borrow": True}]


def _fleet_inventory() -> dict:
    """Three L40S servers: l40s-a (2 GPUs) time-slices production's small services, l40s-b (1)
    the data team's notebooks, l40s-c (1) is training's."""
    return {"gpushare_policy": {"cluster_name": "l40s-fleet", "timezone": "UTC"}, "gpushare_teams": TEAMS,
            "gpushare_nodes": {
                "l40s-a": {"gpu_model": "l40s", "gpu_count": 2,
                           "gpus": [{"index": i, "mode": "timeslice", "team": "production", "replicas": 6}
                                    for i in range(2)]},
                "l40s-b": {"gpu_model": "l40s", "gpu_count": 1,
                           "gpus": [{"index": 0, "mode": "timeslice", "team": "data-science", "replicas": 4}]},
                "l40s-c": {"gpu_model": "l40s", "gpu_count": 1, "gpus": [{"index": 0, "mode": "whole", "team": "training"}]}},
            "gpushare_workloads": [
                {"name": "embeddings", "team": "production", "kind": "serving", "sharing": "timeslice", "replicas": 2},
                {"name": "classifier", "team": "production", "kind": "serving", "sharing": "timeslice", "replicas": 2},
                {"name": "speech-to-text", "team": "production", "kind": "serving", "sharing": "timeslice"},
                {"name": "notebooks", "team": "data-science", "kind": "notebook", "sharing": "timeslice", "replicas": 4},
                {"name": "fine-tune", "team": "training", "kind": "training", "sharing": "whole"}]}


def _svc(advice, name):
    return next(s for s in advice["services"] if s["name"] == name)


def _fixture_summary() -> dict:
    return json.loads(FIXTURE.read_text())["summary"]


def _clients_by_hand(mib: float, activity: float) -> int:
    """Equal shares of an L40S (1/n of memory and of the SMs) that still hold one pod's need."""
    return min(64, int(L40S_MIB // (mib * HEADROOM)), math.floor(1 / activity + 1e-9))


@pytest.fixture(scope="module")
def fleet():
    usage, truth = usage_synth.l40s_fleet()
    return ua.advise(usage, _fleet_inventory()), truth


@pytest.fixture(scope="module")
def heavy():
    usage, truth = usage_synth.l40s_fleet(heavy_neighbour=True)
    return ua.advise(usage, _fleet_inventory()), truth


# --------------------------------------------------------------------------- the calibration


def test_shipped_mps_calibration_is_the_h200_fixture():
    """The collection cannot read tests/ at run time, so it ships the ratios it reads; they are the
    fixture's, key for key."""
    doc = json.loads(FIXTURE.read_text())
    shipped = calibration.DEFAULT_DOCUMENT
    assert {k: doc["summary"][k] for k in shipped["summary"]} == shipped["summary"]
    assert {k: doc["card"][k] for k in shipped["card"]} == shipped["card"]
    assert (doc["format"], doc["tool"], doc["date"]) == (shipped["format"], shipped["tool"], shipped["date"])
    assert calibration.DEFAULT.mps_vs_timeslice == doc["summary"]["mps_vs_timeslice_small_inference_throughput"]
    # contended against contended, same run (issue 33 item 16): 1.78 / 99.66 inferences/s of the light
    # service next to four heavy loops (MPS / time-sliced), 105.68 / 229.78 of speech among five small
    # services (equal 20 % cap / MPS without limits)
    assert calibration.DEFAULT.mps_unlimited_small_next_to_heavy == 0.018
    assert calibration.DEFAULT.mps_equal_cap_heavier_service == 0.46


def test_mps_calibration_from_a_users_file(tmp_path):
    """A user's file (the benchmark's output as it is) is read whole; the fixture itself is one."""
    assert calibration.load(str(FIXTURE)) == calibration.DEFAULT
    doc = json.loads(FIXTURE.read_text())
    doc["summary"]["mps_vs_timeslice_small_inference_throughput"] = 2.5
    doc["card"]["name"] = "NVIDIA L40S"
    path = tmp_path / "l40s.json"
    path.write_text(json.dumps(doc))
    mine = calibration.load(str(path))
    assert mine.mps_vs_timeslice == 2.5 and mine.source.startswith("NVIDIA L40S, driver 580.159.04, 2026-12-02")


@pytest.mark.parametrize("content, says", [
    ("not json", "cannot be read"),
    (json.dumps({"format": 2, "summary": {}}), "not a calibration file of format 1"),
    (json.dumps({"format": 1, "summary": {"mps_vs_timeslice_small_inference_throughput": 1.5}}),
     "summary.mps_equal_cap_vs_timeslice_small_inference_throughput is None"),
    (json.dumps({"format": 1, "summary": dict(calibration.DEFAULT_DOCUMENT["summary"], equal_cap_pct="20")}),
     "summary.equal_cap_pct is '20'"),
])
def test_bad_mps_calibration_names_the_file_the_key_and_the_fix(tmp_path, content, says):
    path = tmp_path / "calibration.json"
    path.write_text(content)
    with pytest.raises(ua.AdviceError) as failure:
        calibration.load(str(path))
    assert says in str(failure.value) and str(path) in str(failure.value)
    assert "benchmarks/sharing_modes.py" in str(failure.value)


def test_missing_mps_calibration_file(tmp_path):
    with pytest.raises(ua.AdviceError, match="calibration .*nowhere.json cannot be read"):
        calibration.load(str(tmp_path / "nowhere.json"))


# --------------------------------------------------------------------------- co-located small inference on L40S


def test_advisor_proposes_mps_for_co_located_small_inference_on_l40s(fleet):
    advice, truth = fleet
    for name, (mib, activity) in truth["services"].items():
        s = _svc(advice, name)
        assert (s["status"], s["kind"], s["rule"], s["sharing"]) == ("ok", "serving", "mps-co-located", "mps"), s
        assert s["gpu_replicas"] == _clients_by_hand(mib, activity), name
    # by hand: embeddings 1/0.08 -> 12, classifier 1/0.06 -> 16, speech 1/0.22 -> 4 (memory allows 23, 27, 17)
    assert {n: _svc(advice, n)["gpu_replicas"] for n in truth["services"]} == \
        {"embeddings": 12, "classifier": 16, "speech-to-text": 4}


def test_mps_node_takes_the_fewest_clients_so_every_limit_holds_its_need(fleet):
    """The device plugin gives every client of a node 1/replicas: the node takes speech's 4, so
    each client gets 25 % of the SMs (speech needs 22 %) and 11517 MiB; 5 pods fit 2 cards."""
    advice, truth = fleet
    assert advice["plan_check"]["status"] == "accepted"
    gpus = advice["proposal"]["nodes"]["l40s-a"]["gpus"]
    assert [(g["mode"], g["team"], g["replicas"]) for g in gpus] == [("mps", "production", 4)] * 2
    assert sum(truth["pods"].values()) <= 2 * 4
    plan = build_plan(dict(_fleet_inventory(), gpushare_workloads=advice["proposal"]["workloads"],
                           gpushare_nodes=advice["proposal"]["nodes"]))
    node = next(n for n in plan["nodes"] if n["name"] == "l40s-a")
    for gpu in node["gpus"]:
        assert gpu["per_client"] == {"compute_percent": 25, "memory_mib": L40S_MIB // 4}
        for mib, activity in truth["services"].values():
            assert gpu["per_client"]["compute_percent"] >= 100 * activity
            assert gpu["per_client"]["memory_mib"] >= mib * HEADROOM


def test_mps_choice_gives_the_measured_reason(fleet):
    advice, _truth = fleet
    summary = _fixture_summary()
    why = _svc(advice, "speech-to-text")["why"]
    assert "%.2fx the inferences of time-slicing" % summary["mps_vs_timeslice_small_inference_throughput"] in why
    assert "%.3f" % summary["mps_equal_cap_vs_unlimited_heavier_service_throughput"] in why
    assert "NVIDIA H200, driver 580.159.04, 2026-12-02" in why
    assert "1/4 (25 % of the SMs" in why
    report = render_advice.report_markdown(advice, [], "accepted")
    assert "MPS, 4 clients per card, each 1/4" in report
    assert "measurements on NVIDIA H200" in report


def test_notebooks_stay_timeslice_next_to_mps(fleet):
    advice, _truth = fleet
    notebooks = _svc(advice, "notebooks")
    assert (notebooks["kind"], notebooks["rule"], notebooks["sharing"]) == ("notebook", "notebook-pool", "timeslice")
    assert [g["mode"] for g in advice["proposal"]["nodes"]["l40s-b"]["gpus"]] == ["timeslice"]


def test_user_calibration_is_cited_in_the_mps_reason(tmp_path):
    doc = json.loads(FIXTURE.read_text())
    doc["summary"]["mps_vs_timeslice_small_inference_throughput"] = 2.5
    doc["card"]["name"] = "NVIDIA L40S"
    path = tmp_path / "l40s.json"
    path.write_text(json.dumps(doc))
    usage, _truth = usage_synth.l40s_fleet()
    advice = ua.advise(usage, _fleet_inventory(), check=False, calibration=calibration.load(str(path)))
    why = _svc(advice, "embeddings")["why"]
    assert "measured on NVIDIA L40S" in why and "2.50x the inferences" in why
    assert advice["calibration"]["mps_vs_timeslice"] == 2.5


# --------------------------------------------------------------------------- heavy neighbours


def test_advisor_refuses_mps_next_to_heavy_neighbours_citing_the_calibration(heavy):
    """speech-to-text shared its card with a fine-tune at 0.9 of the card (the generator's; the
    card's activity is capped at 1, so the fitted share is a little less): MPS without limits
    would starve it, equal limits would cut the fine-tune: not MPS, and the reason gives the
    measured ratios. The services that were never on its card with it keep MPS."""
    advice, _truth = heavy
    summary = _fixture_summary()
    speech = _svc(advice, "speech-to-text")
    assert speech["sharing"] != "mps" and speech["rule"] == "no-mig-card"
    refused = speech["mps_refused"]
    busy = float(re.search(r"fine-tune \(p95 ([0-9.]+) of the card\)", refused).group(1))
    assert ua.Settings().mps_heavy_compute <= busy <= usage_synth.HEAVY_NEIGHBOUR[1]
    assert "%.3f" % summary["mps_unlimited_vs_timeslice_small_next_to_heavy_throughput"] in refused   # 0.018
    assert "%.3f" % summary["mps_equal_cap_vs_unlimited_heavier_service_throughput"] in refused       # 0.460
    assert refused in speech["why"]
    assert refused in render_advice.report_markdown(advice, [], "accepted")
    assert (_svc(advice, "classifier")["sharing"], _svc(advice, "embeddings")["sharing"]) == ("mps", "mps")
    assert advice["plan_check"]["status"] in ("accepted", "repaired")


def test_advisor_refuses_mps_in_a_cluster_with_mig_slices():
    """An H200 cut by MIG elsewhere: the cluster's MIG strategy is mixed and the device plugin
    does not start MPS under it (the planner refuses such a plan), so no service gets MPS."""
    inv = _fleet_inventory()
    inv["gpushare_nodes"]["h200-01"] = {"gpu_model": "h200", "gpu_count": 1,
                                        "gpus": [{"index": 0, "mode": "mig", "team": "production"}]}
    usage, truth = usage_synth.l40s_fleet()
    advice = ua.advise(usage, inv, check=False)
    for name in truth["services"]:
        s = _svc(advice, name)
        assert s["sharing"] == "whole" and s["rule"] == "no-mig-card", s
        assert "the cluster has MIG slices (on h200-01)" in s["mps_refused"]
