# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mutation tooling (tests/mutation/): the test files each module's run selects exist; no
test file is named after how its need was found (test_mutants_*) rather than what it checks;
and survivors.py --check, which make mutation runs after each module, fails on a survivor that
is neither a change of words nor explained in explained.tsv (a small fake stage stands in for
mutmut's output)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN_SH = ROOT / "tests" / "mutation" / "run.sh"
_spec = importlib.util.spec_from_file_location("survivors", ROOT / "tests" / "mutation" / "survivors.py")
survivors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(survivors)


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


MUTATED = "src/ansible_collections/gpushare/cluster/plugins/module_utils/planners/fake.py"
KEY = "ansible_collections.gpushare.cluster.plugins.module_utils.planners.fake."
# What mutmut 3 leaves: each function's original and its mutants side by side (a method's
# names carry its class between two U+01C1), and the exit code of each mutant's tests.
SOURCE = """
def x_share__mutmut_orig(n):
    if n > 1:
        return "too many GPUs here"
    return n


def x_share__mutmut_1(n):
    if n > 1:
        return "XXtoo many GPUs hereXX"
    return n


def x_share__mutmut_2(n):
    if n >= 1:
        return "too many GPUs here"
    return n


def x_share__mutmut_3(n):
    if n > 2:
        return "too many GPUs here"
    return n


def x_share__mutmut_4(n):
    return n


def x\u01c1Pool\u01c1size__mutmut_orig(self):
    return len(self.gpus)


def x\u01c1Pool\u01c1size__mutmut_1(self):
    return None
"""
EXIT_CODES = {"x_share__mutmut_1": 0, "x_share__mutmut_2": 0, "x_share__mutmut_3": 0, "x_share__mutmut_4": 1,
              "x\u01c1Pool\u01c1size__mutmut_1": 0}


def _stage(tmp_path):
    stage = tmp_path / "planners.fake"
    mutated = stage / "mutants" / MUTATED
    mutated.parent.mkdir(parents=True)
    mutated.write_text(SOURCE)
    pathlib.Path(str(mutated) + ".meta").write_text(json.dumps(
        {"exit_code_by_key": {KEY + name: code for name, code in EXIT_CODES.items()}}))
    (stage / "setup.cfg").write_text("[mutmut]\nonly_mutate = %s\n" % MUTATED)
    return stage


def _explained(tmp_path, *rows):
    path = tmp_path / "explained.tsv"
    path.write_text("# comment\nmodule\tmutant\treason\n" + "".join("\t".join(row) + "\n" for row in rows))
    return path


def test_a_survivor_without_a_reason_fails_the_check_and_words_need_none(tmp_path, monkeypatch, capsys):
    stage = _stage(tmp_path)
    # share 1 changes only a sentence (words); share 2 and 3 change the decision; share 4 was
    # killed; Pool.size 1 is explained.
    explained = _explained(tmp_path, ("planners/fake", "share 3", "equivalent: no count is exactly 2"),
                           ("planners/fake", "Pool.size 1", "unread: nothing reads the size"),
                           ("planners/fake", "share 4", "equivalent: once"))
    monkeypatch.setattr(survivors, "EXPLAINED", explained)
    unexplained, stale = survivors.check_stage(stage, survivors.read_explained(explained))
    assert [entry.splitlines()[0] for entry in unexplained] == ["planners/fake share 2 (survived)"]
    assert "+    if n >= 1:" in unexplained[0]
    assert stale == ["planners/fake share 4"]
    assert survivors.main(["--check", str(stage)]) == 1
    assert "1 survivor(s) without a reason" in capsys.readouterr().out
    # Explained, the run passes.
    monkeypatch.setattr(survivors, "EXPLAINED", _explained(
        tmp_path, ("planners/fake", "share 2", "equivalent: n is never 1 here"),
        ("planners/fake", "share 3", "equivalent"), ("planners/fake", "Pool.size 1", "unread")))
    assert survivors.main(["--check", str(stage)]) == 0


def test_a_row_without_a_reason_is_refused(tmp_path):
    with pytest.raises(ValueError, match="share 2 has no reason"):
        survivors.read_explained(_explained(tmp_path, ("planners/fake", "share 2", " ")))


def test_the_explained_survivors_name_modules_of_the_run_once_each_with_a_reason():
    rows = survivors.read_explained(survivors.EXPLAINED)
    modules = set(_selection_of(RUN_SH.read_text()))
    assert len(rows) > 200 and {module for module, _mutant in rows} <= modules
    assert all(len(mutant.rsplit(" ", 1)) == 2 and mutant.rsplit(" ", 1)[1].isdigit() for _module, mutant in rows)
    lines = [line for line in survivors.EXPLAINED.read_text().splitlines() if line and not line.startswith("#")]
    assert len(lines) == len(rows) + 1      # the header; no row twice


def test_a_run_that_tried_no_mutant_has_nothing_to_check(tmp_path, monkeypatch, capsys):
    # mutmut stops before any mutant when the selected tests fail unmutated: every exit code None.
    stage = _stage(tmp_path)
    meta = stage / "mutants" / (MUTATED + ".meta")
    meta.write_text(json.dumps({"exit_code_by_key": {KEY + name: None for name in EXIT_CODES}}))
    monkeypatch.setattr(survivors, "EXPLAINED", _explained(tmp_path, ("planners/fake", "share 3", "equivalent")))
    assert survivors.main(["--check", str(stage)]) == 0
    out = capsys.readouterr().out
    assert "no mutant was run" in out and "did not survive" not in out
