# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The calibration over several runs, and what the advisor reads of it (issue 33, item 16):
benchmarks/sharing_modes.py summarises every run, writes each figure's median and its spread;
calibration.py reads the medians of ratios of contended figures measured in one run (MPS against
time-slicing with the same clients), never a ratio to a shape "alone" (which moved 1.7x between
runs), records the spread, and MPS is proposed only where every run measured it ahead.

The benchmark's input here is written by hand: three runs whose "alone" figures differ by up to
2.3x while the contended figures keep their ratios within a few per cent."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

import usage_synth
from test_advisor_mps import _fleet_inventory     # the L40S fleet's inventory
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import calibration, render_advice
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

ROOT = Path(__file__).resolve().parents[5]
FIXTURE = ROOT / "tests" / "fixtures" / "sharing-modes-h200.json"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("sharing_modes", ROOT / "benchmarks" / "sharing_modes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _client(shape, per_s, p50=1.0):
    return {"shape": shape, "per_s": per_s, "p50_ms": p50, "p99_ms": 2 * p50}


def _case(*clients):
    small = [c for c in clients if c["shape"] != "heavy"]
    heavy = [c for c in clients if c["shape"] == "heavy"]
    totals = {}
    if small:
        totals["small_inferences_per_s"] = sum(c["per_s"] for c in small)
    if heavy:
        totals["heavy_matmuls_per_s"] = sum(c["per_s"] for c in heavy)
    return {"clients": list(clients), "totals": totals}


def _run(alone: float, ts_small: float, mps_small: float, light_ts: float, light_mps: float, speech_mps: float,
         speech_cap: float, heavy_ts: float, heavy_mps: float) -> dict:
    """One run: ``alone`` the embeddings shape alone (time-sliced, whole card); five small
    services (each 1/5 of the total) time-sliced and under MPS; the light service next to four
    heavy loops; speech among the five under MPS without and with the equal cap; five heavy loops."""
    five = ["embeddings", "embeddings", "classifier", "classifier"]
    return {"modes": {
        "timeslice": {"cases": {
            "alone_embeddings": _case(_client("embeddings", alone)),
            "five_small": _case(*[_client(s, ts_small / 5) for s in five], _client("speech", ts_small / 5)),
            "small_next_to_four_heavy": _case(_client("embeddings", light_ts), *[_client("heavy", 100.0)] * 4),
            "five_heavy": _case(*[_client("heavy", heavy_ts / 5)] * 5)}},
        "mps_unlimited": {"cases": {
            "five_small": _case(*[_client(s, (mps_small - speech_mps) / 4) for s in five], _client("speech", speech_mps)),
            "small_next_to_four_heavy": _case(_client("embeddings", light_mps), *[_client("heavy", 140.0)] * 4),
            "five_heavy": _case(*[_client("heavy", heavy_mps / 5)] * 5)}},
        "mps_equal_20pct": {"cases": {
            "five_small": _case(*[_client(s, 200.0) for s in five], _client("speech", speech_cap)),
            "small_next_to_four_heavy": _case(_client("embeddings", 150.0), *[_client("heavy", 110.0)] * 4)}},
        "mps_proportional": {"cases": {
            "small_next_to_four_heavy": _case(_client("embeddings", 230.0), *[_client("heavy", 95.0)] * 4)}}}}


# Three runs, by hand. Alone: 150, 250, 350 inferences/s (2.3x apart). Contended, per run:
#   MPS / time-slicing, five small:        1600/1000 = 1.600, 1240/800 = 1.550, 1920/1200 = 1.600
#   light next to heavy, MPS / time-sliced:   2/100 = 0.020,    1.5/100 = 0.015,    2.4/120 = 0.020
#   speech, equal cap / MPS without limits:  92/200 = 0.460,    90/200 = 0.450,     95/200 = 0.475
#   five heavy, time-sliced / MPS:          540/600 = 0.900,   550/600 = 0.917,    545/600 = 0.908
RUNS = [_run(150.0, 1000.0, 1600.0, 100.0, 2.0, 200.0, 92.0, 540.0, 600.0),
        _run(250.0, 800.0, 1240.0, 100.0, 1.5, 200.0, 90.0, 550.0, 600.0),
        _run(350.0, 1200.0, 1920.0, 120.0, 2.4, 200.0, 95.0, 545.0, 600.0)]


def _doc():
    return {"format": 1, "tool": "benchmarks/sharing_modes.py", "date": "2026-12-05T08:00:00+00:00",
            "card": {"name": "NVIDIA H200", "driver_version": "580.159.04"}, "equal_cap_pct": 20,
            "runs": copy.deepcopy(RUNS)}


def test_the_benchmark_writes_each_figures_median_and_spread(bench):
    summary, spread = bench.summarize_runs(_doc())
    assert summary["mps_vs_timeslice_small_inference_throughput"] == 1.6
    assert spread["mps_vs_timeslice_small_inference_throughput"] == {"min": 1.55, "median": 1.6, "max": 1.6, "runs": 3}
    assert summary["mps_unlimited_vs_timeslice_small_next_to_heavy_throughput"] == 0.02
    assert spread["mps_unlimited_vs_timeslice_small_next_to_heavy_throughput"]["min"] == 0.015
    assert summary["mps_equal_cap_vs_unlimited_heavier_service_throughput"] == 0.46
    assert summary["timeslice_vs_mps_five_heavy_throughput"] == 0.908
    # the alone figures are kept with their spread, for the record: 150 to 350
    assert summary["alone_per_s"]["embeddings"] == 250.0
    assert spread["alone_per_s.embeddings"] == {"min": 150.0, "median": 250.0, "max": 350.0, "runs": 3}


def test_summarize_rewrites_a_file_without_a_gpu(bench, tmp_path):
    source, out = tmp_path / "three-runs.json", tmp_path / "summarised.json"
    source.write_text(json.dumps(_doc()))
    assert bench.main(["--summarize", str(source), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["runs_done"] == 3 and written["summary"]["mps_vs_timeslice_small_inference_throughput"] == 1.6
    assert [r["summary"]["mps_vs_timeslice_small_inference_throughput"] for r in written["runs"]] == [1.6, 1.55, 1.6]
    assert bench.parse_args(["--out", "x.json"]).runs == 3
    with pytest.raises(SystemExit):
        bench.parse_args(["--out", "x.json", "--runs", "0"])


def test_the_advisor_reads_the_medians_and_records_the_spread(bench):
    doc = _doc()
    doc["summary"], doc["spread"] = bench.summarize_runs(doc)
    doc["runs_done"] = 3
    cal = calibration.from_document(doc)
    assert (cal.runs, cal.mps_vs_timeslice, cal.mps_unlimited_small_next_to_heavy) == (3, 1.6, 0.02)
    assert (cal.mps_equal_cap_heavier_service, cal.timeslice_heavy_total) == (0.46, 0.908)
    assert cal.spread["mps_vs_timeslice"] == (1.55, 1.6)
    assert cal.as_dict()["spread"]["mps_unlimited_small_next_to_heavy"] == [0.015, 0.02]
    assert "median of 3 runs" in cal.spread_text() and "mps_vs_timeslice 1.55-1.6" in cal.spread_text()
    assert cal.mps_serves_more and cal.mps_starves_next_to_heavy


def test_no_figure_the_advisor_reads_moves_with_the_alone_figures(bench):
    """The same runs with every shape's "alone" figures 1.7x higher (what one harness measured
    against another): the calibration the advisor reads is the same."""
    moved = _doc()
    for run in moved["runs"]:
        for mode in run["modes"].values():
            for name, case in mode["cases"].items():
                if name.startswith("alone_"):
                    for c in case["clients"]:
                        c["per_s"] *= 1.7
                        c["p50_ms"] *= 1.7
    docs = []
    for doc in (_doc(), moved):
        doc["summary"], doc["spread"] = bench.summarize_runs(doc)
        docs.append(doc)
    assert docs[0]["summary"]["alone_per_s"] != docs[1]["summary"]["alone_per_s"]
    assert calibration.from_document(docs[0]).as_dict() == calibration.from_document(docs[1]).as_dict()


def test_the_shipped_fixture_is_its_own_figures_summarised(bench):
    """The H200 fixture is one run (the test server was not available for more): its summary is
    what the benchmark computes from its per-client figures, and its spread says one run."""
    doc = json.loads(FIXTURE.read_text())
    summary, spread = bench.summarize_runs(copy.deepcopy(doc))
    assert summary == doc["summary"] and spread == doc["spread"] and doc["runs_done"] == 1
    assert calibration.DEFAULT.runs == 1 and calibration.DEFAULT.spread_text() == "one run: no spread measured"
    usage, _truth = usage_synth.l40s_fleet()
    report = render_advice.report_markdown(ua.advise(usage, _fleet_inventory(), check=False), [], "not checked")
    assert "2026-12-02 (benchmarks/sharing_modes.py), one run: no spread measured (the calibration" in report


def test_mps_is_proposed_only_where_every_run_measured_it_ahead(bench, tmp_path):
    """Runs of 1.6, 0.95 and 1.6 (median 1.6): MPS was behind time-slicing in one run, so the
    small inference services of the L40S fleet are not given MPS, and the reason says why."""
    doc = _doc()
    doc["runs"][1] = _run(250.0, 800.0, 760.0, 100.0, 1.5, 200.0, 90.0, 550.0, 600.0)      # 760/800 = 0.95
    doc["summary"], doc["spread"] = bench.summarize_runs(doc)
    doc["runs_done"] = 3
    assert doc["spread"]["mps_vs_timeslice_small_inference_throughput"] == {"min": 0.95, "median": 1.6, "max": 1.6,
                                                                            "runs": 3}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(doc))
    usage, _truth = usage_synth.l40s_fleet()
    advice = ua.advise(usage, _fleet_inventory(), check=False, calibration=calibration.load(str(path)))
    speech = next(s for s in advice["services"] if s["name"] == "speech-to-text")
    assert speech["sharing"] != "mps"
    assert "1.600x the inferences of time-slicing, not more in every run" in speech["mps_refused"]
    assert "mps_vs_timeslice 0.95-1.6" in speech["mps_refused"]
    # with the shipped H200 calibration (1.585, one run) the same services get MPS
    shipped = ua.advise(usage, _fleet_inventory(), check=False)
    assert next(s for s in shipped["services"] if s["name"] == "speech-to-text")["sharing"] == "mps"


def test_the_benchmark_measures_every_mode_once_per_run(bench, tmp_path, monkeypatch):
    """--runs 3 --device cpu with the client pools replaced by the runs above: each run's modes
    are recorded under runs[i], none at the top, and the summary is the runs' medians."""
    done = []

    def mode(self, name, _description, _env, _cap_of, daemon):
        del daemon
        number = len(self.doc["runs"]) - 1
        self.doc["modes"][name] = copy.deepcopy(RUNS[number]["modes"].get(name, {"cases": {}}))
        done.append((number, name))
        self.save()

    def proportional(self, name, _env):
        mode(self, name, None, None, None, True)

    monkeypatch.setattr(bench.Benchmark, "mode", mode)
    monkeypatch.setattr(bench.Benchmark, "proportional", proportional)
    out = tmp_path / "cpu.json"
    bench.Benchmark(bench.parse_args(["--out", str(out), "--device", "cpu"])).run()
    written = json.loads(out.read_text())
    assert [n for n, _m in done] == [0] * 4 + [1] * 4 + [2] * 4
    assert "modes" not in written and written["complete"] and written["runs_done"] == 3
    assert [sorted(r["modes"]) for r in written["runs"]] == [sorted(RUNS[0]["modes"])] * 3
    assert written["summary"]["mps_vs_timeslice_small_inference_throughput"] == 1.6
    assert written["spread"]["mps_vs_timeslice_small_inference_throughput"]["min"] == 1.55
