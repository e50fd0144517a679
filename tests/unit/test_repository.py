# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repository stands alone: no tracked file reads, names or points to notes outside it.

A fresh clone has nothing next to it, so a path into the private notes folder beside the
development checkout, or the name of one of its notes, would be a dead end for its reader
(or a failing test). Facts cite
their upstream sources (NVIDIA docs and repositories, Kueue, the DRA driver) instead.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Assembled from parts so that this file does not itself hold the pointers it looks for.
NOTES = "sha" + "red"
FORBIDDEN = ("../" + NOTES, NOTES + "/reference", NOTES + "/design.md", NOTES + "/usage-traces",
             "nvidia_" + "specifics.md", "kueue_" + "schedulers.md")


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
    sample = ("ok\nsee %s/x.md\nand %s \u00a71.2\n" % (FORBIDDEN[1], FORBIDDEN[4])).replace(
        FORBIDDEN[1], FORBIDDEN[0] + "/reference").encode()
    assert pointers(sample) == [(2, FORBIDDEN[0]), (2, FORBIDDEN[1]), (3, FORBIDDEN[4])]
    assert pointers(b"tests/fixtures/nvidia/h200/mig-lgip.txt") == []


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for name in tracked_files():
        path = ROOT / name
        if name == THIS or not path.is_file():     # this file; a deleted-but-unstaged file or a submodule
            continue
        found += ["%s:%d: %s" % (name, line, needle) for line, needle in pointers(path.read_bytes())]
    assert not found, "tracked files point outside the repository:\n" + "\n".join(found)
