# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repository stands alone: no tracked file reads, names or points to notes outside it.

A fresh clone has nothing next to it, so a path such as ``../shared/...`` or the name of a
private research note would be a dead end for its reader (or a failing test). Facts cite
their upstream sources (NVIDIA docs and repositories, Kueue, the DRA driver) instead.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
FORBIDDEN = ("../shared", "shared/reference", "shared/design.md", "shared/usage-traces",
             "nvidia_specifics.md", "kueue_schedulers.md")


def tracked_files() -> list[str]:
    run = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if run.returncode != 0:
        pytest.fail("git ls-files failed in %s: %s" % (ROOT, run.stderr.decode(errors="replace")), pytrace=False)
    return [name for name in run.stdout.decode().split("\0") if name]


def pointers(data: bytes) -> list[tuple[int, str]]:
    """(line, needle) of every forbidden string in ``data``."""
    out = []
    for needle in FORBIDDEN:
        at = data.find(needle.encode())
        while at != -1:
            out.append((data[:at].count(b"\n") + 1, needle))
            at = data.find(needle.encode(), at + 1)
    return sorted(out)


def test_the_scan_finds_a_pointer():
    sample = b"ok\nsee ../shared/reference/x.md\nand nvidia_specifics.md \xc2\xa71.2\n"
    assert pointers(sample) == [(2, "../shared"), (2, "shared/reference"), (3, "nvidia_specifics.md")]
    assert pointers(b"tests/fixtures/nvidia/h200/mig-lgip.txt") == []


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for name in tracked_files():
        path = ROOT / name
        if name == THIS or not path.is_file():     # this file; a deleted-but-unstaged file or a submodule
            continue
        found += ["%s:%d: %s" % (name, line, needle) for line, needle in pointers(path.read_bytes())]
    assert not found, "tracked files point outside the repository:\n" + "\n".join(found)
