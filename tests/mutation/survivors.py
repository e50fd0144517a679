#!/usr/bin/env python
"""Sort one module's surviving mutants (after ``tests/mutation/run.sh MODULE``) into groups.

Reads the stage ``build/mutation/MODULE`` that run.sh left: the mutated copy of the module
(every mutant is a function ``x_NAME__mutmut_N`` next to ``x_NAME__mutmut_orig``) and mutmut's
``.meta`` (the exit code per mutant). Each survivor ("survived", or "no tests": no selected
test calls the function) is compared with the original function on the syntax tree:

- ``words``: the two differ only in string constants that contain a space (problem messages,
  notes, ``why`` texts): what a person reads, not what a cluster or another component reads;
- ``review``: anything else. These need a test or a written reason (docs/testing.md).

Writes ``survivors.md`` in the stage (every diff, by group and function) and prints the counts.

With ``--check``, fails (exit 1) when a survivor is neither ``words`` nor explained in
``tests/mutation/explained.tsv`` (module, mutant as ``function N``, reason), naming each with
its diff; tests/mutation/run.sh runs it after every module, so ``make mutation`` fails on a new
survivor nobody explained. Rows whose mutant did not survive this run are listed as stale
(killed now, or renumbered by a change of the function).

usage: tests/mutation/survivors.py [--check] build/mutation/planners.plan [...]
"""

import ast
import collections
import configparser
import difflib
import json
import sys
from pathlib import Path

STATUS = {0: "survived", 5: "no tests", 33: "no tests"}


def _functions(tree: ast.AST) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


class _Blur(ast.NodeTransformer):
    """Replaces every string constant holding a space (a sentence) by one placeholder."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and " " in node.value.strip():
            return ast.copy_location(ast.Constant("<words>"), node)
        return node


def _source(node: ast.FunctionDef, name: str, blur: bool = False) -> str:
    copy = ast.parse(ast.unparse(node)).body[0]
    copy.name = name
    if blur:
        copy = _Blur().visit(copy)
    return ast.unparse(copy)


EXPLAINED = Path(__file__).resolve().parent / "explained.tsv"


def stage_module(stage: Path) -> str:
    """The module a stage mutated, as run.sh names it: planners/plan."""
    config = configparser.ConfigParser()
    config.read(stage / "setup.cfg")
    only = config["mutmut"]["only_mutate"].strip()
    return only.split("/module_utils/", 1)[1].rsplit(".py", 1)[0]


def survivors(stage: Path):
    """(function, number, status, group, diff) of every surviving mutant of a stage, in order."""
    config = configparser.ConfigParser()
    config.read(stage / "setup.cfg")
    mutated = stage / "mutants" / config["mutmut"]["only_mutate"].strip()
    meta = json.loads(Path(str(mutated) + ".meta").read_text())["exit_code_by_key"]
    functions = _functions(ast.parse(mutated.read_text()))
    for key, code in sorted(meta.items(), key=lambda kv: (kv[0].rsplit("__mutmut_", 1)[0], int(kv[0].rsplit("_", 1)[1]))):
        status = STATUS.get(code)
        if status is None:
            continue
        mutant = key.rsplit(".", 1)[1]
        base, number = mutant.rsplit("__mutmut_", 1)
        original = functions[base + "__mutmut_orig"]
        changed = functions[mutant]
        plain = base[2:].replace("\u01c1", ".").lstrip(".")
        group = "words" if _source(original, "f", True) == _source(changed, "f", True) else "review"
        diff = "\n".join(difflib.unified_diff(_source(original, plain).splitlines(), _source(changed, plain).splitlines(),
                                              lineterm="", n=1))
        yield plain, int(number), status, group, "\n".join(diff.splitlines()[2:])


def read_explained(path: Path = EXPLAINED) -> dict[tuple[str, str], str]:
    """(module, "function N") -> reason, from explained.tsv (# lines and the header skipped)."""
    rows = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("module\t"):
            continue
        module, mutant, reason = line.split("\t")
        if not reason.strip():
            raise ValueError("%s: %s %s has no reason" % (path, module, mutant))
        rows[(module, mutant)] = reason
    return rows


def tried(stage: Path) -> int:
    """How many mutants of a stage mutmut ran (none when its clean run of the tests failed)."""
    config = configparser.ConfigParser()
    config.read(stage / "setup.cfg")
    meta = Path(str(stage / "mutants" / config["mutmut"]["only_mutate"].strip()) + ".meta")
    if not meta.exists():
        return 0
    return sum(code is not None for code in json.loads(meta.read_text())["exit_code_by_key"].values())


def check_stage(stage: Path, explained: dict[tuple[str, str], str]) -> tuple[list[str], list[str]]:
    """(unexplained survivors with their diffs, stale rows) of one stage."""
    module = stage_module(stage)
    unexplained, seen = [], set()
    for plain, number, status, group, diff in survivors(stage):
        name = "%s %d" % (plain, number)
        seen.add(name)
        if group != "words" and (module, name) not in explained:
            unexplained.append("%s %s (%s)\n%s" % (module, name, status, diff))
    stale = ["%s %s" % key for key in sorted(explained) if key[0] == module and key[1] not in seen]
    return unexplained, stale


def sort_stage(stage: Path) -> collections.Counter:
    mutated_name = stage_module(stage).rsplit("/", 1)[-1] + ".py"
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
    for plain, number, status, group, diff in survivors(stage):
        groups[(group, plain)].append("%s %s (%s)\n```diff\n%s\n```" % (plain, number, status, diff))
        counts[(group, status)] += 1
    lines = ["# Surviving mutants of %s" % mutated_name, ""]
    for (group, plain), diffs in sorted(groups.items()):
        lines += ["## %s: %s (%d)" % (group, plain, len(diffs)), ""] + diffs + [""]
    (stage / "survivors.md").write_text("\n".join(lines))
    return counts


def main(args: list[str]) -> int:
    check = "--check" in args
    stages = [a for a in args if a != "--check"]
    if not check:
        for stage in stages:
            counts = sort_stage(Path(stage))
            print("%s: %s" % (stage, ", ".join("%s/%s %d" % (g, s, n) for (g, s), n in sorted(counts.items())) or "no survivors"))
        return 0
    explained, failed = read_explained(EXPLAINED), False
    for stage in stages:
        if not tried(Path(stage)):
            # mutmut stops before any mutant when the selected tests fail unmutated (its run.log
            # says so): nothing to check, and the run has failed already.
            print("%s: no mutant was run, nothing to check (see run.log)" % stage)
            continue
        unexplained, stale = check_stage(Path(stage), explained)
        for row in stale:
            print("explained.tsv: %s did not survive this run (killed now, or renumbered: remove or renumber it)" % row)
        for entry in unexplained:
            print("unexplained survivor: %s" % entry)
        if unexplained:
            failed = True
            print("%s: %d survivor(s) without a reason in tests/mutation/explained.tsv: kill them with a test, or add "
                  "a row (module, function N, why no input tells them apart)" % (stage, len(unexplained)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
