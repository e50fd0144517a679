"""The gpushare_* variables the plan accepts (model.VARIABLES) are the ones the roles,
playbooks and plugins read, and docs/roles.md lists them: found by reading those files, not
from the list itself."""

from __future__ import annotations

import re

from ansible_collections.gpushare.cluster.plugins.module_utils.inventory.model import VARIABLE_PREFIXES, VARIABLES

from inventories import ROOT

NAME = re.compile(r"\bgpushare_[a-z0-9_]*[a-z0-9]\b")
# gpushare_* words that are no variable: inventory groups, the planner's key for the GPU
# hosts, a register name in the plan module's EXAMPLES.
NOT_VARIABLES = {"gpushare_gpu_nodes", "gpushare_control_plane", "gpushare_nodes", "gpushare_plan_result"}
MODEL = ROOT / "plugins" / "module_utils" / "inventory" / "model.py"


def names_read() -> set[str]:
    found = set()
    for top in ("roles", "playbooks", "plugins", "inventory-examples"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".yml", ".yaml", ".j2") and path != MODEL:
                found |= set(NAME.findall(path.read_text(errors="replace")))
    return {n for n in found - NOT_VARIABLES if not n.startswith(VARIABLE_PREFIXES)}


def test_every_variable_read_is_known_and_every_known_one_is_read():
    read = names_read()
    read.discard("gpushare_team")     # the plan module's documentation of a misspelling
    assert sorted(read - set(VARIABLES)) == []
    assert sorted(set(VARIABLES) - read) == []


def test_docs_roles_lists_the_variables():
    text = (ROOT / "docs" / "roles.md").read_text()
    listed = text.split("<!-- variables: begin -->")[1].split("<!-- variables: end -->")[0]
    assert sorted(NAME.findall(listed)) == sorted(VARIABLES)
