# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A crash of the planner or of a renderer (a bug, issue 33 item 1: report.md's `_quota_cell`
formatting a string with %d) ends plan.yml with what failed, not with a bare module failure:
the stage, the exception's type and message, that it is a bug to report and the file holding
the traceback, with no traceback on the screen and nothing written.

Each case runs playbooks/plan.yml through ansible-playbook on a copy of the collection whose
planner or renderer raises (the function replaced at the end of its module)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inventories import EXAMPLES, ROOT
from playbooks import ANSIBLE_PLAYBOOK

MESSAGE = "%d format: a real number is required, not str"
RAISE = "\n\ndef {name}(*args, **kwargs):\n    raise TypeError({message!r})\n"

# (module under plugins/module_utils, function replaced, the stage the message names)
CASES = [
    ("planners/plan.py", "plan_and_changes", "planning (plugins/module_utils/planners)"),
    ("renderers/render_report.py", "report_markdown", "rendering the report (report.md)"),
    ("renderers/render_svg.py", "render_svg", "rendering the picture (split.svg)"),
    ("renderers/render_manifests.py", "manifest_files", "rendering the manifests (manifests/)"),
]


def collection_raising(base: Path, module: str, function: str) -> Path:
    """A copy of the collection under ``base`` whose ``module`` ends by redefining
    ``function`` to raise TypeError(MESSAGE); the collections path to use."""
    dest = base / "ansible_collections" / "gpushare" / "cluster"
    for part in ("plugins", "roles", "playbooks", "meta"):
        shutil.copytree(ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "galaxy.yml", dest / "galaxy.yml")
    target = dest / "plugins" / "module_utils" / module
    target.write_text(target.read_text() + RAISE.format(name=function, message=MESSAGE))
    return base


def run_plan(collections: Path, plan_dir: Path, *extra: str) -> tuple[int, str]:
    """plan.yml of the copy, default output: (return code, what the person sees)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(collections),
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1",
               TMPDIR=str(plan_dir.parent))
    playbook = collections / "ansible_collections" / "gpushare" / "cluster" / "playbooks" / "plan.yml"
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(EXAMPLES / "four-gpu-server" / "hosts.yml"), str(playbook),
                           "-e", "gpushare_plan_dir=%s" % plan_dir, *extra],
                          capture_output=True, text=True, env=env, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("module, function, stage", CASES, ids=[c[1] for c in CASES])
def test_a_crash_names_the_stage_the_error_and_the_traceback_file(tmp_path, module, function, stage):
    collections = collection_raising(tmp_path / "collections", module, function)
    plan_dir = tmp_path / "plan"
    rc, out = run_plan(collections, plan_dir)
    assert rc != 0
    first = "The plan failed while %s: TypeError: %s" % (stage, MESSAGE)
    assert out.count(first) == 1, out
    assert "This is a bug in gpushare.cluster, not a problem of the inventory" in out
    assert "Traceback" not in out and "MODULE FAILURE" not in out and "module failed" not in out, out
    trace = re.search(r"the traceback, written to (\S+?\.traceback)", out)
    assert trace, out
    text = Path(trace.group(1)).read_text()
    assert text.startswith("Traceback") and "in %s" % function in text and MESSAGE in text
    assert not plan_dir.exists()


def test_with_vvv_the_traceback_is_printed_too(tmp_path):
    module, function, stage = CASES[1]
    rc, out = run_plan(collection_raising(tmp_path / "collections", module, function), tmp_path / "plan", "-vvv")
    assert rc != 0
    assert "The plan failed while %s: TypeError: %s" % (stage, MESSAGE) in out
    assert "Traceback (most recent call last):" in out and "in report_markdown" in out
