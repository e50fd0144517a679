# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mutation tooling (tests/mutation/): the test files each module's run selects exist, and
no test file is named after how its need was found (test_mutants_*) rather than what it checks."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN_SH = ROOT / "tests" / "mutation" / "run.sh"


def _selection_of(run_sh: str) -> dict[str, list[str]]:
    """TESTS of run.sh as bash reads it: module -> paths under tests/unit/."""
    head = run_sh.split("run_module() {")[0].replace("set -euo pipefail", "")
    script = head + '\nfor m in "${MODULES[@]}"; do printf "%s=%s\\n" "$m" "$(echo ${TESTS[$m]})"; done\n'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return {line.split("=", 1)[0]: line.split("=", 1)[1].split() for line in out.splitlines()}


def test_every_module_selects_test_files_that_exist():
    # run.sh skips a path that is not there (MUTMUT_TESTS may name any), so a misspelt or moved
    # file would silently leave its tests out of the module's run and its mutants unkilled.
    selection = _selection_of(RUN_SH.read_text())
    assert len(selection) >= 8 and all(selection.values())
    missing = {module: [p for p in paths if not (ROOT / "tests" / "unit" / p).is_file()]
               for module, paths in selection.items()}
    assert {m: p for m, p in missing.items() if p} == {}


def test_test_files_are_named_by_behaviour():
    assert sorted(p.name for p in (ROOT / "tests" / "unit").rglob("test_mutants_*.py")) == []
