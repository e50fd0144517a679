# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check tsdb-backfill against a real Prometheus 2.42 (not part of `make test`).

    python tests/prometheus/check_tsdb_backfill.py [--size small|large] [--tool PATH] [--keep]

small (default): a few series of known values with gaps (NaN), odd label values (quotes,
backslashes, unicode, `}`, a newline), two step sizes and one series longer than a block,
written with series_file.py, backfilled with the tool, then Prometheus 2.42 (install.sh) is
started on the directory and every step of every series is asked with query_range (step =
the series' step, --query.lookback-delta=1s so a gap stays empty): each value and each gap
must come back exactly as this script generated it.

large: 6,000 series (1,000 GPUs x 6 dcgm-exporter metrics) x 8,064 steps of 5 minutes
(28 days ending now) with gaps, ratios rounded to 6 decimals and MiB/percent to integers;
reports the tool's wall and CPU seconds and peak RSS (GNU time -v; over 512 MiB fails), the
blocks written (one), Prometheus' start time on the directory and the time of one
query_range of 8 series over the 28 days, whose values are checked too.

--tool runs another binary (e.g. one built with a deliberate bug); by default
build-backfill.sh builds it. Data goes to build/tsdb-backfill-check-SIZE (removed unless --keep).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from series_file import write_series  # noqa: E402

DAY = 86400
# Well under 1 GB for ~50 million samples; 48 million raw float64s alone are 368 MiB.
RSS_LIMIT_MIB = 512


def fail(msg: str) -> None:
    print(f"check_tsdb_backfill: FAIL: {msg}", file=sys.stderr)
    raise SystemExit(1)


# ---------------------------------------------------------------- series


def small_series(end: int) -> list:
    """(labels, start_s, step_s, values) of the small check; END is a multiple of 3600."""
    rng = np.random.default_rng(7)
    out = []
    odd = ['say "hi"', 'back\\slash\\', 'ünïcødé ✓ GPU', 'brace}{', 'new\nline', "comma,=x"]
    # 300 s steps over 2 days, gaps at the first and last step, a run of 10, singles.
    for i, value in enumerate(odd):
        n = 2 * DAY // 300
        v = np.round(rng.random(n), 6)
        v[0] = np.nan if i % 2 == 0 else v[0]
        v[-1] = np.nan if i % 3 == 0 else v[-1]
        v[100:110] = np.nan
        v[rng.integers(1, n - 1, 20)] = np.nan
        out.append(({"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gpu": str(i),
                     "exported_pod": value, "Hostname": "node-0"}, end - 2 * DAY, 300, v))
    # Integers (MiB), negative and large values, a zero, 60 s steps over 6 hours.
    n = 6 * 3600 // 60
    v = rng.integers(0, 81920, n).astype(float)
    v[::7] = np.nan
    v[3], v[4], v[5] = 0.0, -1.5, 1.7976931348623157e308
    out.append(({"__name__": "DCGM_FI_DEV_FB_USED", "gpu": "0", "UUID": "GPU-1}2\"3"},
                end - 6 * 3600, 60, v))
    # 33 days of hourly samples: more than one 31-day block, a sample on the block boundary.
    n = 33 * 24 + 1
    v = np.arange(n, dtype=float) + 0.25
    v[n // 2] = np.nan
    out.append(({"__name__": "kube_node_labels", "node": "node-0",
                 "label_nvidia_com_mig_config": "all-1g.10gb"}, end - 33 * DAY, 3600, v))
    # 7-minute steps off the block grid, across the boundary 2 days before END: no sample
    # may land in both blocks or in neither.
    n = 3 * DAY // 420
    v = np.round(rng.random(n) * 100)
    out.append(({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1"}, end - 3 * DAY + 7, 420, v))
    # Only gaps: writes no series at all.
    out.append(({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "9"}, end - DAY, 300,
                np.full(12, np.nan)))
    return out


LARGE_METRICS = [  # name, kind
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "ratio"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "ratio"),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "ratio"),
    ("DCGM_FI_DEV_GPU_UTIL", "percent"),
    ("DCGM_FI_DEV_FB_USED", "mib"),
    ("DCGM_FI_DEV_FB_FREE", "mib"),
]


def large_values(rng, kind: str, n: int) -> np.ndarray:
    """A slow random walk with daily swings, rounded as dcgm-exporter reports it."""
    t = np.arange(n)
    walk = np.cumsum(rng.normal(0, 0.02, n))
    base = 0.5 + 0.3 * np.sin(2 * np.pi * t / 288 + rng.random() * 6) + walk - walk.mean()
    r = np.clip(base, 0, 1)
    if kind == "ratio":
        v = np.round(r, 6)
    elif kind == "percent":
        v = np.round(r * 100)
    else:
        v = np.round(r * 81920)
    if rng.random() < 0.2:  # a GPU that was away for a while
        a = int(rng.integers(0, n - 300))
        v[a:a + int(rng.integers(1, 300))] = np.nan
    return v


# ---------------------------------------------------------------- tool and Prometheus


def build_tool() -> str:
    return subprocess.run([str(HERE / "build-backfill.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]


def run_tool(tool: str, data: Path, files: list) -> dict:
    """Run the tool under GNU time -v when there is one; its figures."""
    cmd = [tool, str(data)] + [str(f) for f in files]
    gnu_time = shutil.which("time", path="/usr/bin")
    t0 = time.monotonic()
    if gnu_time:
        p = subprocess.run([gnu_time, "-v"] + cmd, capture_output=True, text=True, check=False)
    else:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    out = {"stdout": p.stdout.strip(), "wall_s": wall}
    if gnu_time:
        def field(name):
            return re.search(rf"{re.escape(name)}: (.*)", p.stderr).group(1)
        out["cpu_s"] = float(field("User time (seconds)")) + float(field("System time (seconds)"))
        out["rss_mib"] = int(field("Maximum resident set size (kbytes)")) / 1024
    else:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out["rss_mib"] = after.ru_maxrss / 1024  # the largest child so far
    return out


class Prometheus:
    """Prometheus 2.42 on DATA with retention 400d on a free loopback port."""

    def __init__(self, data: Path, *flags: str):
        bindir = subprocess.run([str(HERE / "install.sh")], check=True, capture_output=True,
                                text=True).stdout.strip().splitlines()[-1]
        cfg = data.parent / (data.name + ".prometheus.yml")
        cfg.write_text("global:\n  scrape_interval: 1m\n")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(data.parent / (data.name + ".prometheus.log"), "w")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [f"{bindir}/prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={data}",
             "--storage.tsdb.retention.time=400d", f"--web.listen-address=127.0.0.1:{port}",
             *flags], stdout=self.log, stderr=subprocess.STDOUT)
        while True:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() - t0 > 300:
                self.stop()
                fail(f"Prometheus did not become ready; see {self.log.name}")
            time.sleep(0.1)
        self.start_s = time.monotonic() - t0

    def query_range(self, query: str, start: float, end: float, step: int) -> list:
        q = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": step})
        with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{q}", timeout=300) as r:
            body = json.load(r)
        if body["status"] != "success":
            fail(f"query_range {query}: {body}")
        return body["data"]["result"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def selector(labels: dict) -> str:
    def esc(v):  # PromQL string: backslash, double quote and newline escaped
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"


def compare(prom: Prometheus, labels: dict, start: int, step: int, values: np.ndarray) -> int:
    """query_range of one series over its whole span at its step; the samples checked."""
    end = start + (len(values) - 1) * step
    result = prom.query_range(selector(labels), start, end, step)
    want = {start + i * step: float(v) for i, v in enumerate(values) if not math.isnan(v)}
    if not want:
        if result:
            fail(f"{labels}: only gaps were written, Prometheus answers {result}")
        return 0
    if len(result) != 1:
        fail(f"{labels}: Prometheus answers {len(result)} series, want 1: {result}")
    if result[0]["metric"] != labels:
        fail(f"labels come back as {result[0]['metric']!r}, written {labels!r}")
    got = {int(round(float(t))): float(v) for t, v in result[0]["values"]}
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = [(t, want[t], got[t]) for t in sorted(set(want) & set(got)) if got[t] != want[t]]
    if missing or extra or wrong:
        fail(f"{labels}: {len(missing)} samples missing (first {missing[:3]}), "
             f"{len(extra)} where a gap was written (first {extra[:3]}), "
             f"{len(wrong)} wrong (first (t, want, got) {wrong[:3]})")
    return len(want)


def block_ranges(data: Path) -> list:
    """[(minTime, maxTime)] of the blocks in DATA, in order; overlapping blocks fail."""
    ranges = sorted((m["minTime"], m["maxTime"]) for m in
                    (json.loads(p.read_text()) for p in data.glob("*/meta.json")))
    for previous, block in zip(ranges, ranges[1:]):
        if block[0] < previous[1]:
            fail(f"blocks overlap: {ranges}")
    return ranges


def block_count(data: Path) -> int:
    return len(block_ranges(data))


# ---------------------------------------------------------------- runs


def check_small(tool: str, work: Path) -> None:
    end = int(time.time()) // 3600 * 3600
    series = small_series(end)
    files = [work / "a.series", work / "b.series"]
    with open(files[0], "wb") as fa, open(files[1], "wb") as fb:
        for i, (labels, start, step, values) in enumerate(series):
            write_series(fa if i % 2 == 0 else fb, labels, start, step, values)
    data = work / "data"
    res = run_tool(tool, data, files)
    print(res["stdout"])
    want_blocks = 2  # the 33-day series needs two 31-day windows
    if block_count(data) != want_blocks:
        fail(f"{block_count(data)} blocks in {data}, want {want_blocks}")
    prom = Prometheus(data, "--query.lookback-delta=1s")
    try:
        n = sum(compare(prom, labels, start, step, values)
                for labels, start, step, values in series)
    finally:
        prom.stop()
    want = sum(int(np.count_nonzero(~np.isnan(s[3]))) for s in series)
    if n != want or f" {want} samples" not in res["stdout"]:
        fail(f"{n} samples compared, the tool says '{res['stdout']}', {want} were written")
    print(f"check_tsdb_backfill: small: OK, {len(series)} series, {n} samples and every gap "
          f"come back exactly from Prometheus 2.42 (started in {prom.start_s:.1f} s)")


def check_large(tool: str, work: Path, gpus: int) -> None:
    step, steps = 300, 28 * DAY // 300
    end = int(time.time()) // step * step
    start = end - (steps - 1) * step
    rng = np.random.default_rng(42)
    f = work / "large.series"
    kept = []  # node-000's FB_USED for the query check
    t0 = time.monotonic()
    total = 0
    with open(f, "wb") as out:
        for g in range(gpus):
            node = f"node-{g // 8:03d}"
            for name, kind in LARGE_METRICS:
                labels = {"__name__": name, "gpu": str(g % 8), "UUID": f"GPU-{g:08x}-0000",
                          "Hostname": node, "modelName": "NVIDIA H100 80GB HBM3",
                          "job": "dcgm-exporter", "instance": f"10.0.{g // 8}.1:9400",
                          "namespace": "gpu-operator", "pci_bus_id": f"00000000:{g % 8:02X}:00.0"}
                v = large_values(rng, kind, steps)
                total += int(np.count_nonzero(~np.isnan(v)))
                write_series(out, labels, start, step, v)
                if name == "DCGM_FI_DEV_FB_USED" and node == "node-000":
                    kept.append((labels, v))
    print(f"check_tsdb_backfill: large: {gpus * len(LARGE_METRICS)} series x {steps} steps, "
          f"{total} samples, {f.stat().st_size / 2**20:.0f} MiB input written in "
          f"{time.monotonic() - t0:.1f} s")
    data = work / "data"
    res = run_tool(tool, data, [f])
    print(res["stdout"])
    print(f"check_tsdb_backfill: large: tool wall {res['wall_s']:.1f} s, CPU {res['cpu_s']:.1f} s, "
          f"peak RSS {res['rss_mib']:.0f} MiB, {block_count(data)} blocks, "
          f"{sum(p.stat().st_size for p in data.rglob('*') if p.is_file()) / 2**20:.0f} MiB on disk")
    if f" {total} samples" not in res["stdout"]:
        fail(f"the tool says '{res['stdout']}', {total} samples were written")
    if res["rss_mib"] > RSS_LIMIT_MIB:
        fail(f"the tool's peak RSS {res['rss_mib']:.0f} MiB is over {RSS_LIMIT_MIB} MiB: it holds raw values")
    if block_count(data) != 1:
        fail(f"{block_count(data)} blocks for 28 days, want one 31-day block")
    # lookback 1s: a gap stays empty instead of showing the sample 5 minutes before it.
    prom = Prometheus(data, "--query.lookback-delta=1s")
    try:
        t1 = time.monotonic()
        result = prom.query_range('DCGM_FI_DEV_FB_USED{Hostname="node-000"}', start, end, step)
        q_s = time.monotonic() - t1
        if len(result) != 8:
            fail(f"query_range of node-000's FB_USED answers {len(result)} series, want 8")
        n = sum(compare(prom, labels, start, step, v) for labels, v in kept)
    finally:
        prom.stop()
    print(f"check_tsdb_backfill: large: OK, Prometheus 2.42 ready in {prom.start_s:.1f} s, "
          f"query_range of 8 series x 28 days at 5m in {q_s:.2f} s, {n} samples of them exact")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--size", choices=["small", "large"], default="small")
    ap.add_argument("--gpus", type=int, default=1000, help="large: GPUs (6 series each)")
    ap.add_argument("--tool", help="tsdb-backfill binary (default: build-backfill.sh's)")
    ap.add_argument("--work", help="directory (default build/tsdb-backfill-check-SIZE)")
    ap.add_argument("--keep", action="store_true", help="keep the directory")
    args = ap.parse_args()
    tool = args.tool or build_tool()
    work = Path(args.work or HERE.parent.parent / "build" / f"tsdb-backfill-check-{args.size}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        (check_small if args.size == "small" else
         lambda t, w: check_large(t, w, args.gpus))(tool, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("TZ", "UTC")
    main()
