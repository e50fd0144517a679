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

usage: tests/mutation/survivors.py build/mutation/planners.plan [...]
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


def sort_stage(stage: Path) -> collections.Counter:
    config = configparser.ConfigParser()
    config.read(stage / "setup.cfg")
    mutated = stage / "mutants" / config["mutmut"]["only_mutate"].strip()
    meta = json.loads(Path(str(mutated) + ".meta").read_text())["exit_code_by_key"]
    functions = _functions(ast.parse(mutated.read_text()))
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
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
        groups[(group, plain)].append("%s %s (%s)\n```diff\n%s\n```" % (plain, number, status, "\n".join(diff.splitlines()[2:])))
        counts[(group, status)] += 1
    lines = ["# Surviving mutants of %s" % mutated.name, ""]
    for (group, plain), diffs in sorted(groups.items()):
        lines += ["## %s: %s (%d)" % (group, plain, len(diffs)), ""] + diffs + [""]
    (stage / "survivors.md").write_text("\n".join(lines))
    return counts


def main(stages: list[str]) -> None:
    for stage in stages:
        counts = sort_stage(Path(stage))
        print("%s: %s" % (stage, ", ".join("%s/%s %d" % (g, s, n) for (g, s), n in sorted(counts.items())) or "no survivors"))


if __name__ == "__main__":
    main(sys.argv[1:])
