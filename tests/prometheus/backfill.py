# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backfill OpenMetrics files into a Prometheus data directory with promtool, fast.

    python tests/prometheus/backfill.py PROMTOOL DATA_DIR FILE.om...

promtool 2.42 (`tsdb create-blocks-from openmetrics`) writes one block per 2 hours and, for
each block, reads its whole input again, so 14 days of a few hundred series take minutes.
This splits the input into one file per 2-hour block first (each read once), runs promtool
on them in parallel with its blocks written to memory (/dev/shm when there is one), and
moves the finished blocks into DATA_DIR. Prometheus compacts the small blocks later.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BLOCK_MS = 2 * 3600 * 1000


def split(name: str, outdir: Path) -> list:
    """One OpenMetrics file per 2-hour block of the input NAME, families kept in order."""
    handles: dict = {}
    family_of_handle: dict = {}
    family_line = None
    with open(name, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                if line.startswith("# TYPE") or line.startswith("# HELP") or line.startswith("# UNIT"):
                    family_line = line
                continue
            if not line.strip():
                continue
            ts = line.rsplit(" ", 1)[1]
            block = int(float(ts) * 1000) // BLOCK_MS
            h = handles.get(block)
            if h is None:
                h = handles[block] = open(outdir / ("%d.om" % block), "w", encoding="utf-8")
            if family_line is not None and family_of_handle.get(block) != family_line:
                h.write(family_line)
                family_of_handle[block] = family_line
            h.write(line)
    paths = []
    for block, h in handles.items():
        h.write("# EOF\n")
        h.close()
        paths.append(outdir / ("%d.om" % block))
    return paths


def main(argv: list) -> int:
    if len(argv) < 3:
        print("usage: backfill.py PROMTOOL DATA_DIR FILE.om...", file=sys.stderr)
        return 2
    promtool, data_dir, files = argv[0], Path(argv[1]), argv[2:]
    for name in files:
        if not Path(name).is_file():
            print("backfill.py: %s: no such OpenMetrics file" % name, file=sys.stderr)
            return 2
    data_dir.mkdir(parents=True, exist_ok=True)
    scratch_root = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="gpushare-backfill-", dir=scratch_root) as tmp:
        tmp = Path(tmp)
        (tmp / "out").mkdir()
        parts = []
        for i, name in enumerate(files):
            (tmp / "in" / str(i)).mkdir(parents=True)
            parts += split(name, tmp / "in" / str(i))

        def one(path: Path):
            out = tmp / "out" / ("%s-%s" % (path.parent.name, path.stem))
            proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(path), str(out)],
                                  capture_output=True, text=True, check=False)
            path.unlink()
            return path.name, proc.returncode, proc.stderr.strip() + proc.stdout.strip(), out

        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for name, rc, msg, out in pool.map(one, parts):
                if rc != 0:
                    failures.append("%s: promtool exit %d: %s" % (name, rc, msg[-2000:]))
                    continue
                for block in out.iterdir():
                    shutil.move(str(block), str(data_dir / block.name))
        if failures:
            print("backfill.py: promtool failed on %d of %d blocks:\n%s" % (len(failures), len(parts), "\n".join(failures[:5])),
                  file=sys.stderr)
            return 1
    print("backfill.py: %d blocks into %s" % (len(parts), data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
