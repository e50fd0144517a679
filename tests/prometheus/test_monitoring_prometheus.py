# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's rules and dashboard against a real Prometheus (Debian's 2.42) loaded
with dcgm-exporter-shaped history of every example inventory (tests/prometheus/generate.py):
every recording rule and every dashboard panel returns data for every team, time-sliced,
MIG and DRA GPUs included (DRA per node). Run by tests/suites/55-prometheus.sh."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / ".collections"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))

# pylint: disable=wrong-import-position
import generate  # noqa: E402
import inventories  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.planners import plan as plan_module  # noqa: E402
from ansible_collections.gpushare.cluster.plugins.module_utils.renderers import render_monitoring  # noqa: E402

DAYS = float(os.environ.get("GPUSHARE_PROM_DAYS", "2"))
STEP = 300
SEED = 7
LOOKBACK_S = 900  # samples are STEP apart (a live scrape is 15 s): Prometheus looks back this far
# The role's gpu_operator values set honorLabels true (pod labels as namespace); an operator
# installed elsewhere keeps the chart default false (exported_namespace). Both are exercised.
HONOR_LABELS = {"four-gpu-server": True}


def query(url: str, path: str, **params) -> dict:
    full = "%s/api/v1/%s?%s" % (url, path, urllib.parse.urlencode(params))
    with urllib.request.urlopen(full, timeout=120) as resp:
        body = json.load(resp)
    assert body["status"] == "success", (params, body)
    return body["data"]


class Stack:
    def __init__(self, name: str, url: str, truth: dict, plan: dict, data_dir: Path, openmetrics: Path):
        self.name, self.url, self.truth, self.plan, self.data_dir = name, url, truth, plan, data_dir
        self.openmetrics = openmetrics

    def instant(self, expr: str, at: float | None = None) -> list:
        params = {"query": expr}
        if at is not None:
            params["time"] = at
        return query(self.url, "query", **params)["result"]

    def window(self, expr: str, step: int = 1800) -> list:
        return query(self.url, "query_range", query=expr, start=self.truth["start"] + 3600,
                     end=self.truth["end"], step=step)["result"]


# The example inventories whose GPUs dcgm-exporter attributes to pods through the device
# plugin. A mig-dynamic GPU's slices exist only while a claim holds them (the DRA driver makes
# them), and generate.py models no per-claim slice nor dcgm-exporter's attribution of DRA-prepared
# MIG devices: monitoring of such GPUs is not proven here (docs/dynamic-mig.md says so).
MONITORED = [name for name in inventories.EXAMPLE_NAMES
             if not any(gpu.get("mode") == "mig-dynamic"
                        for node in inventories.load_example(name)["gpushare_nodes"].values()
                        for gpu in node.get("gpus", []))]


@pytest.fixture(scope="session")
def stacks(tmp_path_factory):
    """One Prometheus per example inventory, all started before any test (rule evaluation
    starts at once), stopped at the end."""
    out = {}
    base = tmp_path_factory.mktemp("prometheus")
    # The history ends when each Prometheus starts; samples are 5 minutes apart (a live scrape
    # is 15 s), so the live rule evaluation looks back 15 minutes for the newest one.
    env = dict(os.environ, GPUSHARE_PROMETHEUS_ARGS="--query.lookback-delta=%ds" % LOOKBACK_S)
    try:
        for name in MONITORED:
            text, truth = generate.build(name, SEED, DAYS, STEP, end=time.time(), honor_labels=HONOR_LABELS.get(name, False))
            om = base / ("%s.om" % name)
            om.write_text(text, encoding="utf-8")
            Path(str(om) + ".json").write_text(json.dumps(truth), encoding="utf-8")
            data = base / ("data-%s" % name)
            proc = subprocess.run([str(HERE / "up.sh"), str(data), str(om)], capture_output=True, text=True, check=False, env=env)
            assert proc.returncode == 0, "up.sh %s failed:\n%s" % (name, proc.stderr[-3000:])
            url = proc.stdout.strip().splitlines()[-1]
            plan = plan_module.build_plan(inventories.load_example(name))
            out[name] = Stack(name, url, truth, plan, data, om)
        yield out
    finally:
        for name in MONITORED:
            subprocess.run([str(HERE / "down.sh"), str(base / ("data-%s" % name))], check=False)


@pytest.fixture(params=MONITORED)
def stack(request, stacks):
    return stacks[request.param]


def _attributed_teams(truth: dict) -> set:
    """Teams with a workload whose pods get dcgm-exporter pod labels and that ran."""
    return {w["team"] for w in truth["workloads"].values() if w["attribution"] == "pod" and w["running_share"] > 0}


def _values(series: list) -> list:
    """Every non-NaN value of a range (values) or instant (value) result."""
    samples = [p for s in series for p in (s["values"] if "values" in s else [s["value"]])]
    return [float(v) for _t, v in samples if not math.isnan(float(v))]


# --- the live rules in the running Prometheus ---------------------------------------------------

def _wait_evaluated(stack, timeout: float = 150) -> list:
    deadline = time.time() + timeout
    while True:
        groups = query(stack.url, "rules")["groups"]
        if all(not g["lastEvaluation"].startswith("0001") for g in groups) or time.time() > deadline:
            return groups
        time.sleep(2)


def test_rules_load_and_evaluate_in_prometheus(stack):
    groups = _wait_evaluated(stack)
    assert {g["name"] for g in groups} == {"gpushare.team-usage", "gpushare.alerts"}
    for g in groups:
        assert not g["lastEvaluation"].startswith("0001"), "group %s never evaluated" % g["name"]
        for r in g["rules"]:
            assert r["health"] == "ok" and not r.get("lastError"), (r["name"], r.get("lastError"))
    alerts = {r["name"] for g in groups for r in g["rules"] if r["type"] == "alerting"}
    assert alerts == {a["alert"] for a in render_monitoring.alert_rules()}
    teams = {t["name"] for t in stack.plan["teams"]}
    for record in ("gpushare:team_gpu_devices:count", "gpushare:team_gpu_busy:sum", "gpushare:team_quota_nominal:sum",
                   "gpushare:team_pending_workloads:sum"):
        got = {s["metric"]["team"] for s in stack.instant(record)}
        assert got == teams, (record, teams - got)


# --- the generated history looks like dcgm-exporter's ------------------------------------------

def test_history_is_shaped_like_dcgm_exporter(stack):
    at = stack.truth["end"]
    assert not stack.instant('DCGM_FI_DEV_GPU_UTIL{GPU_I_PROFILE!=""}', at), "GPU_UTIL is never reported on MIG"
    label = stack.truth["namespace_label"]
    assert stack.window('count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s!=""})' % label), "pod labels in %s" % label
    if any(n["gpus"][i]["mig"] for n in stack.plan["nodes"] for i in range(len(n["gpus"]))):
        assert stack.window('count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!="", GPU_I_ID!=""})')
    if stack.truth["memory_missing"]:
        # MIG instances with activity but no memory series (dcgm-exporter issues 380, 512)
        assert stack.window('count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_ID!=""} unless on (UUID, GPU_I_ID) '
                            'DCGM_FI_DEV_FB_USED{GPU_I_ID!=""})')
    if "duplicated" in stack.truth["timeslice_reporting"].values():
        dup = stack.window('max(count by (UUID, GPU_I_ID) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s!=""}))' % label)
        assert max(_values(dup)) > 1, "a time-sliced GPU copied to every sharer"
    if len(stack.plan["nodes"]) > 1:
        assert stack.window("count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname!=\"\"})")
        assert stack.window("count(DCGM_FI_PROF_GR_ENGINE_ACTIVE{hostname!=\"\"})")
    owners = stack.instant("count by (owner_kind) (kube_pod_owner)", at)
    assert {r["metric"]["owner_kind"] for r in owners} & {"ReplicaSet", "StatefulSet", "Job"}


# --- every recording rule, over the backfilled history -----------------------------------------

def test_every_recording_rule_has_data_for_every_team(stack):
    """Each rule's expression, evaluated over the generated window (what Prometheus records),
    returns data; device rules see each team that ran attributed pods, DRA rules every DRA node."""
    rules = render_monitoring.recording_rules(stack.plan)
    attributed = _attributed_teams(stack.truth)
    teams = {t["name"] for t in stack.plan["teams"]}
    seen: dict = {}
    for rule in rules:
        team = rule["labels"]["team"]
        # p90 of admissions over 30 minutes: sampled every 5 minutes so no admission is stepped over
        result = stack.window(rule["expr"], step=STEP if "admission" in rule["record"] else 1800)
        assert result, "%s for team %s returned nothing over the window" % (rule["record"], team)
        seen.setdefault(rule["record"], set()).add(team)
        values = _values(result)
        if rule["record"] in ("gpushare:team_gpu_devices:count", "gpushare:team_fb_used_mib:sum",
                              "gpushare:team_gpu_busy:sum") and team in attributed:
            assert max(values) > 0, "%s is never above 0 for %s, whose pods ran" % (rule["record"], team)
        if rule["record"] == "gpushare:team_quota_nominal:sum":
            assert max(values) > 0, "team %s owns nothing in Kueue" % team
        later = [t for t in stack.truth["teams"][team]["admissions"] if t > stack.truth["start"] + 3600]
        if rule["record"] == "gpushare:team_admission_wait_seconds:p90" and later:
            assert values, "admissions of %s but no p90 wait" % team
        if "_dra_node_" in rule["record"]:
            nodes = {s["metric"]["node"] for s in result}
            assert nodes == set(render_monitoring.dra_nodes(stack.plan)), (rule["record"], nodes)
    for record, who in seen.items():
        if "_dra_node_" not in record:
            assert who == teams, (record, teams - who)
    assert teams <= attributed | set(), "every team of %s ran attributed pods" % stack.name


def test_time_sliced_mig_and_dra_gpus_are_seen(stack):
    """The GPUs the issue found invisible: time-sliced (nvidia.com/gpu.shared or a time-sliced
    MIG instance) in their team's rules, MIG instances in whole-GPU terms, DRA GPUs per node."""
    rules = {(r["record"], r["labels"]["team"]): r["expr"] for r in render_monitoring.recording_rules(stack.plan)}
    for w in stack.truth["workloads"].values():
        if w["running_share"] == 0:
            continue
        if w["sharing"] in ("timeslice", "mig"):
            devices = stack.window(rules[("gpushare:team_gpu_devices:count", w["team"])])
            assert max(_values(devices)) > 0, "%s's %s GPUs are not in %s's rules" % (w["sharing"], w["team"], w["team"])
        if w["sharing"] == "dra":
            for team in render_monitoring.dra_teams(stack.plan):
                busy = stack.window(rules[("gpushare:team_dra_node_gr_engine_active:avg", team["name"])])
                assert max(_values(busy)) > 0, "the DRA node's activity while %s ran" % w["team"]


# --- every dashboard panel ----------------------------------------------------------------------

def _expand(expr: str, team: str, exprs: dict) -> str:
    """A panel query for one team, with each recorded series replaced by the expression that
    records it (the recorded history exists only from Prometheus' start)."""
    def repl(m):
        record = m.group(1)
        return 'label_replace((%s), "team", "%s", "", "")' % (exprs[(record, team)], team)
    return re.sub(r'(gpushare:[a-z_]+:[a-z0-9]+)\{team=~"\$team"\}', repl, expr)


def test_every_dashboard_panel_has_data_for_every_team(stack):
    board = render_monitoring.team_dashboard(stack.plan)
    rules = render_monitoring.recording_rules(stack.plan)
    exprs = {(r["record"], r["labels"]["team"]): r["expr"] for r in rules}
    dra_teams = {t["name"] for t in render_monitoring.dra_teams(stack.plan)}
    for panel in board["panels"]:
        if panel["type"] == "text":
            assert all(t["name"] in panel["options"]["content"] for t in stack.plan["teams"])
            continue
        for team in (t["name"] for t in stack.plan["teams"]):
            if "_dra_node_" in json.dumps(panel["targets"]) and team not in dra_teams:
                continue
            for target in panel["targets"]:
                expr = _expand(target["expr"], team, exprs).replace("$__range", "1d")
                assert not re.search(r"\$(team|__\w+|\{)", expr), expr        # no Grafana variable left
                if target.get("instant"):
                    result = stack.instant(expr, stack.truth["end"])
                else:
                    result = stack.window(expr)
                assert result, "panel %r, target %s: nothing for team %s" % (panel["title"], target["refId"], team)
                assert all(s["metric"].get("team") == team for s in result), (panel["title"], team)
                if "admission" not in target["expr"]:
                    assert _values(result), "panel %r: only NaN for team %s" % (panel["title"], team)


# --- the rules' values against the seeded series, computed here ---------------------------------

# Compute slices of the whole card (MIG User Guide, "Supported MIG Profiles": 7 on the 7-way
# family), for the MIG models of the example inventories.
CARD_COMPUTE_SLICES = {"NVIDIA H200": 7, "NVIDIA A100-SXM4-80GB": 7}
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+) (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def read_openmetrics(path: Path, names: set) -> dict:
    """{metric: {labels (sorted tuple): [(timestamp, value), ...]}} of the file's samples."""
    out: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = SAMPLE.match(line)
        if not m or m.group(1) not in names:
            continue
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        out.setdefault(m.group(1), {}).setdefault(labels, []).append((float(m.group(4)), float(m.group(3))))
    return out


def at(series: dict, when: float) -> list:
    """(labels, value) of each series' newest sample in (when - LOOKBACK_S, when], as an
    instant query sees backfilled data (no staleness markers)."""
    found = []
    for labels, samples in series.items():
        inside = [(t, v) for t, v in samples if when - LOOKBACK_S < t <= when]
        if inside:
            found.append((dict(labels), max(inside)[1]))
    return found


def team_devices(series: dict, when: float, namespaces: set) -> dict:
    """Device (UUID, GPU_I_ID, GPU_I_PROFILE, modelName) -> the largest value among the
    team's series of it (dcgm-exporter may copy a time-sliced GPU's series to every pod)."""
    devices: dict = {}
    for labels, value in at(series, when):
        if labels.get("namespace") in namespaces or labels.get("exported_namespace") in namespaces:
            key = tuple(labels.get(k, "") for k in ("UUID", "GPU_I_ID", "GPU_I_PROFILE", "modelName"))
            devices[key] = max(value, devices.get(key, value))
    return devices


def by_resource(series: dict, when: float, cluster_queue: str) -> dict:
    sums: dict = {}
    for labels, value in at(series, when):
        if labels.get("cluster_queue") == cluster_queue and labels["resource"].startswith(("nvidia.com/", "gpushare.cluster/")):
            key = (labels["resource"], labels["flavor"])
            sums[key] = sums.get(key, 0.0) + value
    return sums


def hand_values(history: dict, when: float, team: str, namespaces: set) -> dict:
    """Each recording rule's value for ``team`` at ``when``, from the seeded series alone."""
    active = team_devices(history.get("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {}), when, namespaces)
    memory = team_devices(history.get("DCGM_FI_DEV_FB_USED", {}), when, namespaces)
    busy = 0.0
    for (_uuid, _gi, profile, model), value in active.items():
        busy += value * (int(profile.split("g.")[0]) / CARD_COMPUTE_SLICES[model] if profile else 1.0)
    usage = by_resource(history.get("kueue_cluster_queue_resource_usage", {}), when, team)
    nominal = by_resource(history.get("kueue_cluster_queue_nominal_quota", {}), when, team)
    return {
        "gpushare:team_gpu_devices:count": {(): float(len(active))},
        "gpushare:team_gr_engine_active:avg": {(): sum(active.values()) / len(active)} if active else {},
        "gpushare:team_gpu_busy:sum": {(): busy},
        "gpushare:team_fb_used_mib:sum": {(): sum(memory.values())} if memory else {},
        "gpushare:team_quota_usage:sum": usage,
        "gpushare:team_quota_nominal:sum": nominal,
        "gpushare:team_borrowed:sum": {k: max(usage[k] - nominal[k], 0.0) for k in usage.keys() & nominal.keys()},
    }


def test_recording_rules_equal_values_computed_from_the_seeded_series(stack):
    """Every team's device, activity, memory and quota rules, queried at four sample times,
    equal what the seeded OpenMetrics history gives by hand: one series per device (the
    largest, for a time-sliced GPU's copies), a MIG instance's activity times its compute
    slices over the card's, Kueue's series summed per resource and flavor, usage above the
    nominal quota as borrowed."""
    history = read_openmetrics(stack.openmetrics, {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED",
                                                   "kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota"})
    rules = {(r["record"], r["labels"]["team"]): r["expr"] for r in render_monitoring.recording_rules(stack.plan)}
    teams = {t["name"]: set(t["namespaces"]) for t in inventories.load_example(stack.name)["gpushare_teams"]}
    start, end = stack.truth["start"], stack.truth["end"]
    grid = [start + STEP * round((start + f * (end - start) - start) / STEP) for f in (0.3, 0.5, 0.7, 0.95)]
    nonzero = 0
    for when in grid:
        for team, namespaces in teams.items():
            for record, expected in hand_values(history, when + 1, team, namespaces).items():
                result = stack.instant(rules[(record, team)], when + 1)
                got = {tuple(s["metric"].get(k) for k in ("resource", "flavor") if k in s["metric"]): float(s["value"][1])
                       for s in result}
                assert got.keys() == expected.keys(), (record, team, when, got, expected)
                for key, value in expected.items():
                    assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (record, team, when, key, got[key], value)
                nonzero += sum(1 for v in expected.values() if v)
    assert nonzero, "every hand-computed value is 0: the comparison proves nothing"
