"""Advise a fleet through a real Prometheus: advise.yml on 28 days of 1,000 GPUs.

The fleet of advise_fleet.fleet (125 servers x 8 GPUs, 1,375 services), its values rounded as
dcgm-exporter reports them (MiB integers, ratios to 6 decimals), is written as series records
(tests/prometheus/series_file.py) with the label shapes of a kube-prometheus-stack scrape
(tests/prometheus/generate.py's targets): per device and pod DCGM_FI_DEV_FB_USED,
DCGM_FI_DEV_FB_FREE (the card's or slice's MiB less the used), DCGM_FI_PROF_GR_ENGINE_ACTIVE
and, on whole GPUs, DCGM_FI_DEV_GPU_UTIL (percent); per pod kube_pod_owner while
kube-state-metrics lists it and kube_pod_status_phase{phase="Running"} = 1 while it runs
(the pods of this fleet run whenever they exist). One sample every 5 minutes, the advisor's
step, on its grid (a 30 s scrape would be ten times the samples to backfill). The records are
backfilled with tsdb-backfill (tests/prometheus/README.md, "Fast backfill") into one block,
Prometheus 2.42 (tests/prometheus/install.sh) is started on it with
--storage.tsdb.retention.time=400d and --query.lookback-delta=299s: each grid point sees only
its own sample, as a real scrape's series stops at the staleness marker written when the pod
goes (2.42's lookback includes a sample exactly 5 minutes old, so without markers every series
would outlive its pod by one step).

Then `ansible-playbook playbooks/advise.yml` runs on an inventory written from the fleet's
variables (hosts.yml, host_vars/<node>.yml with gpushare_node, group_vars/all.yml), with
gpushare_advise_end at the last sample. Measured: its wall time, CPU (user+sys) and the peak
RSS of its largest process (GNU time -v), the peak of the sum of its process tree's RSS
(sampled every 0.5 s), Prometheus' CPU and RSS (/proc/<pid>) apart, and every request the
module sent: its `queries` result, written to a file by benchmarks/callback_plugins/
advise_queries.py (with the task's seconds) while the default stdout callback prints what
people see.

Check: the advice read from Prometheus (advice.json) must equal ua.advise on the same rounded
history in process, on the grid fetch_usage reads (one empty point more at the start):
per service its status, sharing, kind, rule, profile, GPUs, replicas and needs; the proposed
workloads and nodes. Differences are printed and the exit status is 1.

    make dev-venv collection-link
    .venv/bin/python benchmarks/advise_prometheus.py [--nodes 125] [--days 28] [--keep]

Work files go to build/advise-prometheus/ (series records deleted after the backfill; the
whole directory unless --keep). Target on 2 cores: advise.yml under 60 s and under 1 GB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (HERE, ROOT / "tests" / "prometheus"):
    sys.path.insert(0, str(_path))

# pylint: disable=wrong-import-position
import advise_fleet  # noqa: E402
from advise_fleet import NO_OWNER, ua  # noqa: E402
from generate import DRIVER, EXPORTER_TARGET, KSM_TARGET  # noqa: E402
from series_file import write_series  # noqa: E402

WORK = ROOT / "build" / "advise-prometheus"
BIN = Path(sys.executable).parent
PRODUCT = {"h200-141gb": "NVIDIA H200", "a100-80gb": "NVIDIA A100-SXM4-80GB"}   # modelName as the exporter gives it
# What is compared per service: the choice and the needs it was made from.
CHOICE = ("status", "sharing", "kind", "rule", "mig_profile", "gpus", "replicas", "memory_gib", "memory_need_mib",
          "compute_need")


def exporter_records(f, usage: ua.UsageData) -> int:
    """Every GpuSeries as dcgm-exporter exports it; returns the series written."""
    written = 0
    for s in usage.series:
        target = dict(EXPORTER_TARGET, instance="10.0.%d.%d:9400" % (int(s.node[3:]) // 250, int(s.node[3:]) % 250),
                      pod="nvidia-dcgm-exporter-%s" % s.node[3:])
        labels = dict(target, gpu=str(s.gpu), UUID=s.uuid, pci_bus_id="00000000:%02X:00.0" % (0x18 + 0x10 * s.gpu),
                      device="nvidia%d" % s.gpu, modelName=PRODUCT[s.model], DCGM_FI_DRIVER_VERSION=DRIVER,
                      Hostname=s.node, exported_namespace=s.namespace, exported_pod=s.pod, exported_container="main")
        if s.instance:
            labels.update(GPU_I_PROFILE=s.profile, GPU_I_ID=s.instance)
        start = usage.start + s.offset * usage.step
        # the float32 the fleet keeps, back to the decimals the exporter wrote
        active = np.round(s.active.astype(np.float64), 6)
        metrics = {"DCGM_FI_DEV_FB_USED": np.round(s.fb_used.astype(np.float64)),
                   "DCGM_FI_DEV_FB_FREE": np.round(s.fb_free.astype(np.float64)),
                   "DCGM_FI_PROF_GR_ENGINE_ACTIVE": active}
        if s.instance is None:
            metrics["DCGM_FI_DEV_GPU_UTIL"] = np.round(active * 100)
        for name, values in metrics.items():
            write_series(f, dict(labels, __name__=name), start, usage.step, values)
            written += 1
    return written


def ksm_records(f, usage: ua.UsageData, pods_up: dict) -> int:
    """kube_pod_owner while each pod is listed, kube_pod_status_phase{phase="Running"} = 1
    while it runs, in kube-state-metrics' shape (honorLabels: the pod's namespace and pod)."""
    written = 0
    for (ns, pod), (kind, owner) in sorted(usage.owners.items()):
        up = pods_up[(ns, pod)]
        values = np.where(up.values > 0, 1.0, np.nan)
        start = usage.start + up.offset * usage.step
        uid = hashlib.md5(("%s/%s" % (ns, pod)).encode()).hexdigest()
        controller = NO_OWNER if kind == NO_OWNER else "true"
        write_series(f, dict(KSM_TARGET, __name__="kube_pod_owner", namespace=ns, pod=pod, uid=uid, owner_kind=kind,
                             owner_name=owner, owner_is_controller=controller), start, usage.step, values)
        write_series(f, dict(KSM_TARGET, __name__="kube_pod_status_phase", namespace=ns, pod=pod, uid=uid,
                             phase="Running"), start, usage.step, values)
        written += 2
    return written


def on_fetch_grid(usage: ua.UsageData) -> None:
    """fetch_usage reads days x 288 + 1 points ending at `end` (the last sample): one empty
    point before the fleet's first. Shift the in-process history onto that grid."""
    usage.start -= usage.step
    usage.steps += 1
    for s in usage.series:
        s.offset += 1
    for counts in usage.pods_running.values():
        counts.offset += 1


def write_inventory(folder: Path, variables: dict) -> Path:
    hosts = {"all": {"children": {"gpushare_gpu_nodes": {"hosts": dict.fromkeys(sorted(variables["gpushare_nodes"]))}}}}
    (folder / "host_vars").mkdir(parents=True)
    (folder / "group_vars").mkdir()

    def dump(data, path):
        path.write_text(yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False))
    dump(hosts, folder / "hosts.yml")
    for host, node in variables["gpushare_nodes"].items():
        dump({"gpushare_node": node}, folder / "host_vars" / ("%s.yml" % host))
    dump({k: v for k, v in variables.items() if k != "gpushare_nodes"}, folder / "group_vars" / "all.yml")
    return folder / "hosts.yml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_stats(pid: int) -> dict:
    """CPU seconds (user+sys), RSS and peak RSS (MiB) of a process, from /proc."""
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    status = dict(line.split(":", 1) for line in Path("/proc/%d/status" % pid).read_text().splitlines() if ":" in line)
    rss, peak = (round(int(status[key].split()[0]) / 1024) for key in ("VmRSS", "VmHWM"))
    return {"cpu_s": (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), "rss_mib": rss,
            "peak_rss_mib": peak}


class TreeRss(threading.Thread):
    """The largest sum of RSS over a process and its descendants, sampled every 0.5 s."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak_kib, self.done = pid, 0, threading.Event()

    def run(self):
        while not self.done.wait(0.5):
            parent, rss = {}, {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    stat = Path("/proc/%s/stat" % entry).read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parent[int(entry)] = int(stat[1])
                rss[int(entry)] = int(stat[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
            tree, grew = {self.pid}, True
            while grew:
                more = {p for p, pp in parent.items() if pp in tree} - tree
                tree |= more
                grew = bool(more)
            self.peak_kib = max(self.peak_kib, sum(rss.get(p, 0) for p in tree))


def gnu_time(text: str) -> dict:
    """Wall, CPU and peak RSS from GNU time -v's report."""
    def field(name):
        return re.search(r"^\s*%s: (.*)$" % re.escape(name), text, re.M).group(1)
    wall = [float(x) for x in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    return {"wall_s": round(sum(x * 60 ** i for i, x in enumerate(reversed(wall))), 2),
            "cpu_s": round(float(field("User time (seconds)")) + float(field("System time (seconds)")), 2),
            "peak_rss_mib_largest_process": round(int(field("Maximum resident set size (kbytes)")) / 1024)}


def uptime() -> str:
    """The load averages (1, 5, 15 minutes) as uptime prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def plugins_state() -> tuple[str, list]:
    """A digest of plugins/ and the files there that differ from git HEAD: the module runs
    the working tree, so the result says which code it measured."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        digest.update(path.read_bytes())
    status = subprocess.run(["git", "status", "--porcelain", "--", "plugins"], cwd=ROOT, capture_output=True,
                            text=True, check=False).stdout.split("\n")
    return digest.hexdigest(), [line[3:] for line in status if line]


def normalise(data):
    return json.loads(json.dumps(data))


def differences(mine: dict, theirs: dict) -> list[str]:
    """What differs between the advice in process (mine) and from Prometheus (theirs)."""
    out = []
    a, b = ({(s["name"], s["namespace"]): s for s in advice["services"]} for advice in (mine, theirs))
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            out.append("service %s/%s only %s" % (key[1], key[0], "in process" if key in a else "from Prometheus"))
            continue
        for field in CHOICE:
            if a[key].get(field) != b[key].get(field):
                out.append("service %s/%s %s: in process %r, from Prometheus %r"
                           % (key[1], key[0], field, a[key].get(field), b[key].get(field)))
    for part in ("workloads", "nodes"):
        x, y = mine["proposal"][part], theirs["proposal"][part]
        if x != y:
            xi, yi = ({w["name"]: w for w in p} for p in (x, y)) if part == "workloads" else (x, y)
            found = ["proposal %s %s: in process %s, from Prometheus %s"
                     % (part, k, json.dumps(xi.get(k)), json.dumps(yi.get(k)))
                     for k in sorted(set(xi) | set(yi)) if xi.get(k) != yi.get(k)]
            out += found or ["proposal %s: the same entries in another order" % part]
    return out


def main() -> int:  # pylint: disable=too-many-locals,too-many-statements
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--nodes", type=int, default=125, help="servers of 8 GPUs (125 = 1,000 GPUs)")
    ap.add_argument("--days", type=int, default=28)
    ap.add_argument("--keep", action="store_true", help="keep build/advise-prometheus (data, inventory, advice)")
    args = ap.parse_args()
    out: dict = {"gpus": args.nodes * 8, "days": args.days, "sample_interval_s": 300, "load_before": uptime()}
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    prom = None
    try:
        t0 = time.perf_counter()
        pods_up: dict = {}
        usage, variables = advise_fleet.fleet(args.nodes, args.days, exporter=True, pods_up=pods_up)
        t1 = time.perf_counter()
        records = WORK / "series.bin"
        with open(records, "wb") as f:
            series = exporter_records(f, usage) + ksm_records(f, usage, pods_up)
        t2 = time.perf_counter()
        out.update(series=series, records_mib=round(records.stat().st_size / 2**20))
        tool = subprocess.run(["bash", str(ROOT / "tests/prometheus/build-backfill.sh")], check=True,
                              capture_output=True, text=True).stdout.strip()
        bindir = Path(subprocess.run(["bash", str(ROOT / "tests/prometheus/install.sh")], check=True,
                                     capture_output=True, text=True).stdout.strip().splitlines()[-1])
        t3 = time.perf_counter()
        filled = subprocess.run([tool, str(WORK / "tsdb"), str(records)], check=True, capture_output=True, text=True)
        t4 = time.perf_counter()
        records.unlink()
        out["backfill_says"] = filled.stdout.strip().splitlines()[-1] if filled.stdout.strip() else filled.stderr[-300:]
        (WORK / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        with open(WORK / "prometheus.log", "wb") as log:
            prom = subprocess.Popen([str(bindir / "prometheus"), "--config.file=%s" % (WORK / "prometheus.yml"),
                                     "--storage.tsdb.path=%s" % (WORK / "tsdb"), "--storage.tsdb.retention.time=400d",
                                     "--query.lookback-delta=299s", "--web.listen-address=127.0.0.1:%d" % port],
                                    stdout=log, stderr=subprocess.STDOUT)
        for _attempt in range(600):
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=2).read()
                break
            except OSError:
                if prom.poll() is not None:
                    raise SystemExit("Prometheus exited: see %s" % (WORK / "prometheus.log")) from None
                time.sleep(0.1)
        t5 = time.perf_counter()
        inventory = write_inventory(WORK / "inventory", variables)
        end = int(usage.start + (usage.steps - 1) * usage.step)
        prom_before = proc_stats(prom.pid)
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
                   ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="advise_queries",
                   GPUSHARE_ADVISE_QUERIES=str(WORK / "queries.json"), ANSIBLE_LOCALHOST_WARNING="false",
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        cmd = ["/usr/bin/time", "-v", str(BIN / "ansible-playbook"), "-i", str(inventory),
               str(ROOT / "playbooks/advise.yml"), "-e", "gpushare_prometheus_url=%s" % url,
               "-e", "gpushare_advise_end=%d" % end, "-e", "gpushare_advise_dir=%s" % (WORK / "advise")]
        out["load_at_playbook"] = uptime()
        code_before, out["plugins_differing_from_head"] = plugins_state()
        play = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        watcher = TreeRss(play.pid)
        watcher.start()
        stdout, stderr = play.communicate()
        watcher.done.set()
        prom_after = proc_stats(prom.pid)
        out["plugins_unchanged_during_run"] = plugins_state()[0] == code_before
        if play.returncode != 0:
            print(stdout[-4000:].decode(errors="replace"), stderr[-4000:].decode(errors="replace"), file=sys.stderr)
            raise SystemExit("advise.yml failed (exit %d)" % play.returncode)
        task = json.loads((WORK / "queries.json").read_text())
        queries = task["queries"]
        measured = gnu_time(stderr.decode())
        out.update({"generate_s": round(t1 - t0, 2), "write_records_s": round(t2 - t1, 2),
                    "backfill_s": round(t4 - t3, 2), "prometheus_start_s": round(t5 - t4, 2),
                    "advise_yml": dict(measured, peak_rss_mib_tree_sum=round(watcher.peak_kib / 1024),
                                       module_task_s=task["task_s"]),
                    "prometheus": {"cpu_s_during_advise": round(prom_after["cpu_s"] - prom_before["cpu_s"], 2),
                                   "rss_mib_after": prom_after["rss_mib"], "peak_rss_mib": prom_after["peak_rss_mib"]},
                    "queries_sent": len(queries),
                    "queries_s": round(sum(q["seconds"] for q in queries), 2),
                    "queries_mib": round(sum(q["bytes"] for q in queries) / 2**20, 1),
                    "queries_samples": sum(q["samples"] for q in queries)})
        prom.terminate()
        prom.wait(30)
        prom = None

        theirs = json.loads((WORK / "advise" / "advice.json").read_text())
        on_fetch_grid(usage)
        t6 = time.perf_counter()
        mine = normalise(ua.advise(usage, variables, ua.Settings(days=args.days)))
        out["in_process_advise_s"] = round(time.perf_counter() - t6, 2)
        diff = differences(mine, theirs)
        statuses: dict = {}
        for s in theirs["services"]:
            key = "%s %s" % (s.get("status"), s.get("sharing") or "")
            statuses[key] = statuses.get(key, 0) + 1
        out.update(services=len(theirs["services"]), choices=statuses, same_advice_as_in_process=not diff,
                   differences=diff[:50], load_after=uptime(), queries=queries)
        print(json.dumps(out, indent=1))
        return 1 if diff else 0
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
