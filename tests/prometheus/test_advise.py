# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The advisor end to end: seeded history of the example day (generate.py), backfilled into a
real Prometheus 2.42 (up.sh), read by playbooks/advise.yml over HTTP; the proposal is checked
against the example day and then planned by playbooks/plan.yml as it is.

Two histories of inventory-examples/four-gpu-server in one Prometheus, at different times:

* REAL: four weeks shaped like a real cluster (generate.py --shape real): JupyterHub's bare
  ``jupyter-<user>`` pods culled at night and a Kubeflow Notebook on one time-sliced GPU, the
  fine-tune's nights as CronJob, TrainJob and PyTorchJob runs, Deployments with 10-character
  hashes, completed pods still listed, a node gone two days, people on Berlin time (summer time
  ends inside the window). Read with gpushare_advise_match for the notebooks; the proposal is
  planned by plan.yml and rendered by site.yml (render only, as 35-site-check runs it).
* CONTROLLER: 15 days whose pods are owned by controllers named like the inventory entries.

Bad input against real servers: nothing listening, a wrong path, an empty Prometheus,
kube-state-metrics missing, too little history, selectors matching nothing or one pod twice;
each fails with a message naming what is missing, without a traceback and without writing a
proposal.

Run by tests/suites/56-advise.sh. The generated OpenMetrics files are cached under
~/.cache/gpushare-advise (key: generator, inventory, seeds, days, ends: fixed dates).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "prometheus"
INVENTORY = ROOT / "inventory-examples" / "four-gpu-server"
CACHE = Path(os.environ.get("GPUSHARE_ADVISE_CACHE", Path.home() / ".cache" / "gpushare-advise"))
SEED, STEP = 1, 300
DAY = 86400
# REAL ends on Monday 2026-11-09 00:00 UTC: 28 days that hold Europe's end of summer time (2026-10-25).
REAL = {"days": 28, "end": 1794182400, "shape": "real", "people_timezone": "Europe/Berlin"}
# CONTROLLER ends a day before REAL begins, so a 28-day read of either sees only its own history.
CONTROLLER = {"days": 15, "end": REAL["end"] - 29 * DAY, "shape": "controller", "people_timezone": None}
END = CONTROLLER["end"]
MATCH = {"notebooks": [{"owner_kind": "<none>", "name_prefix": "jupyter-"}, {"labels": {"notebook-name": "eve-gpu"}}]}
BIN = Path(sys.executable).parent
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=str(BIN))


def _env(**extra) -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
                ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOCALHOST_WARNING="false",
                ANSIBLE_PYTHON_INTERPRETER=sys.executable, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")), **extra)


def _key() -> str:
    h = hashlib.sha256()
    for f in [HERE / "generate.py"] + sorted(INVENTORY.rglob("*.yml")):
        h.update(f.read_bytes())
    h.update(json.dumps([SEED, STEP, REAL, CONTROLLER]).encode())
    return h.hexdigest()[:16]


def _generate(out: Path, case: dict, name: str = "four-gpu-server") -> Path:
    """generate.py's history for inventory-examples/NAME, the advisor's series only, written to
    OUT (+ OUT.json), cached."""
    if not (out.is_file() and Path(str(out) + ".json").is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name("tmp-" + out.name)
        cmd = [sys.executable, str(HERE / "generate.py"), "--seed", str(SEED), "--days", str(case["days"]),
               "--step", str(STEP), "--end", str(case["end"]), "--inventory", "inventory-examples/" + name,
               "--shape", case["shape"], "--metrics", "advisor", "--out", str(tmp)]
        if case["people_timezone"]:
            cmd += ["--people-timezone", case["people_timezone"]]
        subprocess.run(cmd, check=True, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL)
        os.replace(str(tmp) + ".json", str(out) + ".json")
        os.replace(tmp, out)
    return out


def _up(data: Path, *files: Path, **env) -> str:
    proc = subprocess.run(["bash", str(HERE / "up.sh"), str(data)] + [str(f) for f in files], capture_output=True,
                          text=True, cwd=ROOT, env=_env(**env), check=False)
    assert proc.returncode == 0, "up.sh failed:\n%s\n%s" % (proc.stdout, proc.stderr)
    return proc.stdout.strip().splitlines()[-1]


def _down(data: Path) -> None:
    subprocess.run(["bash", str(HERE / "down.sh"), str(data)], check=False, cwd=ROOT)


@pytest.fixture(scope="module")
def histories() -> dict:
    return {"real": _generate(CACHE / _key() / "four-gpu-server-real.om", REAL),
            "controller": _generate(CACHE / _key() / "four-gpu-server.om", CONTROLLER)}


@pytest.fixture(scope="module")
def history(histories) -> Path:
    return histories["controller"]


@pytest.fixture(scope="module")
def truth(history) -> dict:
    return json.loads(Path(str(history) + ".json").read_text())


@pytest.fixture(scope="module")
def real_truth(histories) -> dict:
    return json.loads(Path(str(histories["real"]) + ".json").read_text())


@pytest.fixture(scope="module")
def prometheus(histories, tmp_path_factory):
    data = tmp_path_factory.mktemp("prometheus")
    url = _up(data, histories["real"], histories["controller"])
    yield url
    _down(data)


def run_playbook(playbook: str, inventory: Path, *extra: str) -> tuple[int, dict, str]:
    assert ANSIBLE_PLAYBOOK, "ansible-playbook must be installed next to %s (make dev-venv)" % sys.executable
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory), str(ROOT / "playbooks" / playbook), *extra],
                          capture_output=True, text=True, env=_env(), check=False, cwd=ROOT)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout, proc.stderr))
    return proc.returncode, result, proc.stdout + proc.stderr


def advise(url: str, out: Path, *extra: str, end: int = END) -> tuple[int, dict, str]:
    return run_playbook("advise.yml", INVENTORY, "-e", "gpushare_prometheus_url=%s" % url,
                        "-e", "gpushare_advise_dir=%s" % out, "-e", "gpushare_advise_end=%d" % end, *extra)


def advise_real(url: str, out: Path, match, tmp: Path) -> tuple[int, dict, str]:
    """advise.yml on the REAL history, with gpushare_advise_match = MATCH (None: none)."""
    extra = []
    if match is not None:
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "match.json").write_text(json.dumps({"gpushare_advise_match": match}))
        extra = ["-e", "@%s" % (tmp / "match.json")]
    return advise(url, out, *extra, end=REAL["end"])


def failure(result: dict) -> str:
    """The msg of the task that failed."""
    for play in result["plays"]:
        for task in play["tasks"]:
            host = task["hosts"].get("localhost", {})
            if host.get("failed"):
                return host.get("msg", "")
    return ""


@pytest.fixture(scope="module")
def advised(prometheus, tmp_path_factory):
    out = tmp_path_factory.mktemp("advise")
    rc, result, text = advise(prometheus, out)
    assert rc == 0, text[-4000:]
    return out, json.loads((out / "advice.json").read_text()), result


def _svc(advice: dict, name: str) -> dict:
    return next(s for s in advice["services"] if s["name"] == name)


def test_example_day_proposals(advised):
    advice = advised[1]
    got = {s["name"]: (s["status"], s.get("kind"), s.get("sharing")) for s in advice["services"]}
    assert got["vllm-chat"] == ("ok", "serving", "whole"), _svc(advice, "vllm-chat")
    for name in ("embeddings", "classifier", "speech-to-text"):
        assert got[name] == ("ok", "serving", "mig"), _svc(advice, name)
    assert got["notebooks"] == ("ok", "notebook", "timeslice"), _svc(advice, "notebooks")
    assert _svc(advice, "notebooks")["replicas"] == 5
    fine = _svc(advice, "fine-tune")
    assert (fine["status"], fine.get("kind"), fine.get("sharing"), fine.get("gpus")) == ("ok", "training", "whole", 2), fine
    assert "Kueue" in fine["why"]
    (window,) = advice["windows"]
    assert window["name"] == "night" and window["gpus"] == [["gpu01", 2]] and window["for"] == ["training"], window
    start, until = int(window["from"][:2]), int(window["until"][:2])
    night_hours = {(start + k) % 24 for k in range((until - start) % 24)}
    assert {0, 1, 2, 3, 4} <= night_hours and 12 not in night_hours, window
    assert _svc(advice, "vllm-chat")["reservation"], "vLLM's flat 90 % reservation is read as a reservation"
    h200 = next(r for r in advice["buy"]["options"] if r["model"] == "h200-141gb")
    assert (h200["cards"], h200["owned"], h200["to_buy"]) == (4, 4, 0), h200    # the example day fits its server
    assert len(advice["services"]) == 6


def test_evidence_matches_what_was_generated(advised, truth):
    advice = advised[1]
    for name, t in truth["workloads"].items():
        s = _svc(advice, name)
        assert s["team"] == t["team"]
        missing = any(d["memory_missing"] for d in t["devices"])
        if t["memory_peak_mib"] and not missing and not t["memory_reservation_fraction"]:
            # memory used includes the CUDA context the generator adds per pod
            assert s["memory_need_mib"] >= t["memory_peak_mib"], (name, s["memory_need_mib"], t["memory_peak_mib"])
        if t["pattern"] == "serving" and s["sharing"] == "mig":
            card_slices = 7
            profile_slices = int(s["mig_profile"].split("g.")[0])
            assert profile_slices / card_slices >= s["compute_need"] - 1e-9


def test_files_and_report(advised):
    out, advice = advised[0], advised[1]
    report = (out / "report.md").read_text()
    for name in ("vllm-chat", "embeddings", "classifier", "speech-to-text", "notebooks", "fine-tune"):
        assert "### %s" % name in report
        svg = out / "charts" / ("%s.%s.svg" % (name, _svc(advice, name)["namespace"]))
        assert svg.is_file() and svg.read_text().startswith("<svg") and "<polygon" in svg.read_text()
    assert "## GPUs to buy" in report and "## Sharing windows" in report
    workloads = yaml.safe_load((out / "workloads.yml").read_text())["gpushare_workloads"]
    assert {w["name"] for w in workloads} == {"vllm-chat", "embeddings", "classifier", "speech-to-text",
                                              "notebooks", "fine-tune"}
    assert (out / "proposal.diff").read_text()
    assert yaml.safe_load((out / "inventory" / "hosts.yml").read_text()) == \
        yaml.safe_load((INVENTORY / "hosts.yml").read_text())


def test_plan_accepts_the_proposal_as_it_is(advised, tmp_path):
    out, advice = advised[0], advised[1]
    rc, _result, text = run_playbook("plan.yml", out / "inventory", "-e", "gpushare_plan_dir=%s" % tmp_path)
    assert rc == 0, text[-4000:]
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [g["mode"] for g in plan["nodes"][0]["gpus"]] == ["whole", "mig", "timeslice", "whole"]
    assert [w["name"] for w in plan["windows"]] == ["night"]
    slices = {w["name"]: w["slices"][0]["profile"] for w in plan["workloads"] if w["sharing"] == "mig"}
    assert slices == {s["name"]: s["mig_profile"] for s in advice["services"] if s.get("sharing") == "mig"}


def test_second_run_changes_nothing_and_check_mode_writes_nothing(advised, prometheus, tmp_path):
    out = advised[0]
    rc, result, text = advise(prometheus, out)
    assert rc == 0, text[-3000:]
    assert result["stats"]["localhost"]["changed"] == 0
    rc, _result, text = advise(prometheus, tmp_path / "dry", "--check")
    assert rc == 0, text[-3000:]
    assert not (tmp_path / "dry").exists()


# --- the history shaped like a real cluster ------------------------------------------------------


@pytest.fixture(scope="module")
def advised_real(prometheus, tmp_path_factory):
    out = tmp_path_factory.mktemp("advise-real")
    rc, result, text = advise_real(prometheus, out, MATCH, tmp_path_factory.mktemp("vars"))
    assert rc == 0, text[-4000:]
    return out, json.loads((out / "advice.json").read_text()), result


def test_real_cluster_day_is_advised_as_the_day_describes(advised_real, real_truth):
    """vLLM whole; embeddings, classifier and speech-to-text MIG; the notebooks time-sliced with
    five sharers (four JupyterHub pods without a controller and a Kubeflow Notebook, one device);
    the fine-tune whole, two GPUs, at night (CronJob, TrainJob and PyTorchJob runs); every one
    ok, accepted by the planner without repair, nothing unplaced."""
    advice = advised_real[1]
    got = {s["name"]: (s["status"], s.get("kind"), s.get("sharing")) for s in advice["services"]}
    assert got == {"vllm-chat": ("ok", "serving", "whole"), "embeddings": ("ok", "serving", "mig"),
                   "classifier": ("ok", "serving", "mig"), "speech-to-text": ("ok", "serving", "mig"),
                   "notebooks": ("ok", "notebook", "timeslice"), "fine-tune": ("ok", "training", "whole")}
    truth = real_truth["workloads"]
    notebooks = _svc(advice, "notebooks")
    assert notebooks["replicas"] == truth["notebooks"]["replicas"] == len(truth["notebooks"]["pods"]) == 5
    assert notebooks["identity"]["rule"] == "match" and notebooks["identity"]["pods"] == 5
    assert set(notebooks["identity"]["owners"]) == {"<none> <none>", "StatefulSet eve-gpu"}
    (shared,) = notebooks["evidence"]["sharing"]
    assert shared["device"] == "gpu01/2/0" and shared["reporting"] == real_truth["timeslice_reporting"]["gpu01/2/0"]
    assert shared["pods_max"] == 5
    fine = _svc(advice, "fine-tune")
    assert (fine["gpus"], fine["identity"]["rule"]) == (2, "name-prefix"), fine
    kinds = {o for o, _name in truth["fine-tune"]["pods"].values()}
    assert kinds == {"Job", "PyTorchJob"} and {o.split()[0] for o in fine["identity"]["owners"]} <= kinds
    # runs during the two days without the node's exporter are not seen in the GPU metrics
    assert len(truth["fine-tune"]["pods"]) - 2 <= fine["identity"]["pods"] <= len(truth["fine-tune"]["pods"])
    assert _svc(advice, "vllm-chat")["reservation"]
    for name, t in truth.items():
        s = _svc(advice, name)
        if t["memory_peak_mib"] and not t["memory_reservation_fraction"] and \
                not any(d["memory_missing"] for d in t["devices"]):
            assert s["memory_need_mib"] >= t["memory_peak_mib"], (name, s["memory_need_mib"], t["memory_peak_mib"])
    assert advice["unmatched"] == [] and advice["repairs"] == []
    assert advice["plan_check"]["status"] == "accepted" and advice["buy"]["short"] == []
    # the node gone two days: not the services' absence
    vllm = _svc(advice, "vllm-chat")["evidence"]
    outage_share = (real_truth["outage"]["until"] - real_truth["outage"]["from"]) / (real_truth["end"] - real_truth["start"])
    assert vllm["presence"] == 1.0 and vllm["observed_share"] == pytest.approx(1 - outage_share, abs=0.01)
    # the people's clock changed inside the window; the night window is read in the inventory's zone
    assert real_truth["people_offset_changes"] and real_truth["start"] < real_truth["people_offset_changes"][0]
    (window,) = advice["windows"]
    assert window["name"] == "night" and window["gpus"] == [["gpu01", 2]] and window["for"] == ["training"], window
    start, until = int(window["from"][:2]), int(window["until"][:2])
    night_hours = {(start + k) % 24 for k in range((until - start) % 24)}
    assert {0, 1, 2, 3, 4} <= night_hours and 12 not in night_hours, window
    h200 = next(r for r in advice["buy"]["options"] if r["model"] == "h200-141gb")
    assert (h200["cards"], h200["owned"], h200["to_buy"]) == (4, 4, 0), h200


def test_real_proposal_is_planned_and_rendered(advised_real, tmp_path):
    """plan.yml, then site.yml in check mode rendering only (as tests/suites/35-site-check.sh
    runs it), on the advice's inventory copy."""
    out = advised_real[0]
    report = (out / "report.md").read_text()
    assert "recognised by its selectors in gpushare_advise_match" in report and "shared device gpu01/2/0" in report
    rc, _result, text = run_playbook("plan.yml", out / "inventory", "-e", "gpushare_plan_dir=%s" % tmp_path)
    assert rc == 0, text[-4000:]
    plan = json.loads((tmp_path / "plan.json").read_text())
    gpus = plan["nodes"][0]["gpus"]
    assert [g["mode"] for g in gpus] == ["whole", "mig", "timeslice", "whole"]
    assert gpus[2]["replicas"] == 5 and [w["name"] for w in plan["windows"]] == ["night"]
    site = tmp_path / "site"
    rc, _result, text = run_playbook("site.yml", out / "inventory", "--check", "--tags",
                                     "plan,gpu_operator,dra_driver,kueue,monitoring", "-e", "gpushare_render_only=true",
                                     "-e", "gpushare_plan_dir=%s" % site, "-e", "gpushare_window=none")
    assert rc == 0, text[-4000:]
    for role in ("gpu_operator", "kueue", "monitoring"):
        assert (site / "rendered" / role / "values.yaml").is_file(), role
    assert not (site / "rendered" / "dra_driver").exists() and not (site / "plan.json").exists()
    configmaps = (site / "rendered" / "gpu_operator" / "configmaps.yaml").read_text()
    assert "replicas: 5" in configmaps


def test_real_without_selectors_reports_the_jupyterhub_pods(prometheus, tmp_path):
    """Without gpushare_advise_match the notebooks' pods match no workload: reported, not
    proposed as new pools, the notebooks' entry and GPU kept; the proposal still plans."""
    rc, result, text = advise_real(prometheus, tmp_path / "out", None, tmp_path)
    assert rc == 0, text[-4000:]
    advice = json.loads((tmp_path / "out" / "advice.json").read_text())
    notebooks = _svc(advice, "notebooks")
    assert notebooks["status"] == "no_data" and "jupyter (4 pods)" in notebooks["reason"], notebooks
    rows = {u["name"]: u for u in advice["unmatched"]}
    assert set(rows) == {"jupyter", "eve-gpu"} and not any(u["proposed"] for u in rows.values())
    assert rows["jupyter"]["pods"] == 4 and rows["jupyter"]["duplicates"] == "notebooks"
    workloads = yaml.safe_load((tmp_path / "out" / "workloads.yml").read_text())["gpushare_workloads"]
    assert {w["name"] for w in workloads} == {"vllm-chat", "embeddings", "classifier", "speech-to-text",
                                              "notebooks", "fine-tune"}
    assert advice["plan_check"]["status"] == "accepted"
    gpu2 = advice["proposal"]["nodes"]["gpu01"]["gpus"][2]
    assert (gpu2["mode"], gpu2["team"], gpu2["replicas"]) == ("timeslice", "data-science", 5)
    assert "## Pods that match no workload" in (tmp_path / "out" / "report.md").read_text()
    del result


@pytest.mark.parametrize("match, expected", [
    ({"notebooks": {"name_prefix": "jupyterhub-"}},
     ["gpushare_advise_match.notebooks {name_prefix: jupyterhub-} matches no pod of the window (namespaces "
      "data-science)", "jupyter-alice (no controller)", "eve-gpu-0 (StatefulSet eve-gpu)"]),
    ({"notebooks": {"namespace": "data-science"}, "fine-tune": {"namespace": "data-science", "owner_kind": "StatefulSet"}},
     ["pod data-science/eve-gpu-0 (StatefulSet eve-gpu) is matched by fine-tune (gpushare_advise_match.fine-tune "
      "{namespace: data-science, owner_kind: StatefulSet}) and by notebooks (gpushare_advise_match.notebooks "
      "{namespace: data-science})"]),
    ({"notebooks": {"labels": {"app": "jupyterhub"}}},
     ["has no kube_pod_labels series with label_app", "metricLabelsAllowlist"]),
], ids=["matches-nothing", "two-workloads", "label-not-exported"])
def test_bad_selectors_are_named(prometheus, tmp_path, match, expected):
    (tmp_path / "match.json").write_text(json.dumps({"gpushare_advise_match": match}))
    msg = _refused(prometheus, tmp_path / "out", expected[0], "-e", "@%s" % (tmp_path / "match.json"), end=REAL["end"])
    for part in expected[1:]:
        assert part in msg, (part, msg)


# --- bad input -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refused(url: str, out: Path, expected: str, *extra: str, end: int = END) -> str:
    rc, result, text = advise(url, out, *extra, end=end)
    msg = failure(result)
    assert rc != 0 and expected in msg, (expected, msg, text[-2000:])
    assert "Traceback" not in text and "MODULE FAILURE" not in text
    assert not (out / "workloads.yml").exists() and not (out / "inventory").exists()
    return msg


def test_advice_not_written_inside_an_inventory_directory(tmp_path):
    """-i <directory> with the default <inventory>/artifacts/advise: refused, as plan.yml does."""
    rc, result, text = run_playbook("advise.yml", INVENTORY, "-e", "gpushare_prometheus_url=http://127.0.0.1:1")
    assert rc != 0 and "inside the inventory directory" in failure(result), text[-2000:]
    assert not (INVENTORY / "artifacts").exists()


def test_unreachable_prometheus(tmp_path):
    _refused("http://127.0.0.1:%d" % _free_port(), tmp_path, "is unreachable")


def test_wrong_url(prometheus, tmp_path):
    _refused(prometheus + "/graph", tmp_path, "HTTP 404")
    _refused("prometheus:9090", tmp_path, "is not an http(s) URL")


def test_too_little_history(prometheus, tmp_path):
    msg = _refused(prometheus, tmp_path, "not enough data", "-e", "gpushare_advise_min_days=20")
    assert "15.0 days" in msg


def _tiny(path: Path, metrics: list[str]) -> Path:
    """Two samples of each metric for one GPU: a Prometheus that has some data, not the advisor's."""
    t0 = END - 3600
    lines = []
    for m in metrics:
        lines.append("# TYPE %s gauge" % m)
        for t in (t0, t0 + 300):
            lines.append('%s{gpu="0",Hostname="gpu01",modelName="NVIDIA H200",exported_namespace="prod-serving",'
                         'exported_pod="x-1"} 1 %d' % (m, t))
    lines.append("# EOF")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("metrics, expected", [
    (["node_load1"], "has no dcgm-exporter series (DCGM_FI_DEV_FB_USED, DCGM_FI_PROF_GR_ENGINE_ACTIVE, "
                     "DCGM_FI_DEV_GPU_UTIL)"),
    (["DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"], "has no kube_pod_owner series"),
    (["DCGM_FI_DEV_FB_USED"], "but neither DCGM_FI_PROF_GR_ENGINE_ACTIVE nor DCGM_FI_DEV_GPU_UTIL"),
])
def test_missing_metrics_are_named(metrics, expected, tmp_path):
    data = tmp_path / "prometheus"
    url = _up(data, _tiny(tmp_path / "tiny.om", metrics), GPUSHARE_RULES_INVENTORY="inventory-examples/four-gpu-server",
              GPUSHARE_RULES_BACKFILL_HOURS="1")
    try:
        _refused(url, tmp_path / "out", expected)
    finally:
        _down(data)
