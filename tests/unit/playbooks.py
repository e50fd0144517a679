"""Running ansible-playbook from the unit tests against the working tree's collection."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inventories import ROOT

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))


def _run(playbook: str | Path, inventory: str | Path, extra, callback: str) -> subprocess.CompletedProcess:
    assert ANSIBLE_PLAYBOOK, "ansible-playbook must be installed next to %s (make test installs it)" % sys.executable
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"), ANSIBLE_STDOUT_CALLBACK=callback,
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1")
    path = ROOT / "playbooks" / playbook if isinstance(playbook, str) else playbook
    return subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory), str(path), *extra],
                          capture_output=True, text=True, env=env, check=False)


def run_playbook_text(playbook: str | Path, inventory: str | Path, *extra: str) -> tuple[int, str]:
    """Run PLAYBOOK with ansible-core's default output, as a person sees it: (return code,
    stdout and stderr together)."""
    proc = _run(playbook, inventory, extra, "default")
    return proc.returncode, proc.stdout + proc.stderr


def run_playbook(playbook: str | Path, inventory: str | Path, *extra: str) -> tuple[int, dict, str]:
    """Run PLAYBOOK (a name under playbooks/ or a path) with the JSON callback:
    (return code, the callback's result, stderr)."""
    proc = _run(playbook, inventory, extra, "json")
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        pytest.fail("ansible-playbook printed no JSON:\n%s\n%s" % (proc.stdout, proc.stderr))
