# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layers of plugins/module_utils/, read from the real imports.

Data flows one way: a module imports its own subpackage or a lower layer, never a higher
one or a peer of the same height, so no two subpackages import each other. LAYERS is the
picture in docs/architecture.md; test_architecture_doc_lists_the_layers keeps the two equal.
"""

from __future__ import annotations

import ast

import pytest

from inventories import ROOT

MODULE_UTILS = ROOT / "plugins" / "module_utils"
PREFIX = "ansible_collections.gpushare.cluster.plugins."

# subpackage (or top-level module) -> height; higher layers may import lower ones only.
LAYERS = {
    "names": 0,        # every Kubernetes name, label, annotation and version pin
    "hardware": 1,     # GPU catalogue, MIG placement grid, nvidia-smi parsing
    "inventory": 2,    # inventory -> typed model, errors naming inventory paths
    "planners": 3,     # MIG layouts, sharing, Kueue quotas, DRA, the Plan
    "renderers": 4,    # Plan -> Helm values, manifests, report, picture
    "cluster": 5,      # operations on a live cluster: labels, drain, prune, apply, kubeadm
    "advisor": 5,      # usage history -> proposed inventory
    "awx": 5,          # AWX job templates and schedules
}


def layer_of(dotted: str) -> str | None:
    """The layer of ``plugins.module_utils.<layer>[.<module>]``; None outside module_utils."""
    if not dotted.startswith(PREFIX + "module_utils."):
        return None
    return dotted[len(PREFIX + "module_utils."):].split(".")[0]


def imported(source: str) -> set[str]:
    """Dotted names of the collection's modules that ``source`` imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            found.update("%s.%s" % (node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(PREFIX))
    return found


def violations(own_layer: str, source: str) -> list[str]:
    """Imports of ``source`` (a module of ``own_layer``) that break the layering."""
    bad = []
    for name in sorted(imported(source)):
        if name.startswith(PREFIX) and not name.startswith(PREFIX + "module_utils"):
            bad.append("%s (module_utils never imports modules, filters or plugin_utils)" % name)
            continue
        target = layer_of(name)
        if target is None or target == own_layer or target not in LAYERS:
            continue
        if LAYERS[target] >= LAYERS[own_layer]:
            bad.append("%s (layer %s, height %d, is not below %s, height %d)"
                       % (name, target, LAYERS[target], own_layer, LAYERS[own_layer]))
    return bad


def module_files():
    return sorted(path for path in MODULE_UTILS.rglob("*.py") if path.name != "__init__.py")


def own_layer(path) -> str:
    relative = path.relative_to(MODULE_UTILS)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_every_module_belongs_to_a_layer():
    assert {own_layer(path) for path in module_files()} == set(LAYERS)


@pytest.mark.parametrize("path", module_files(), ids=lambda p: str(p.relative_to(MODULE_UTILS)))
def test_module_imports_only_lower_layers(path):
    assert violations(own_layer(path), path.read_text()) == []


def test_no_two_subpackages_import_each_other():
    edges = set()
    for path in module_files():
        for name in imported(path.read_text()):
            target = layer_of(name)
            if target and target != own_layer(path):
                edges.add((own_layer(path), target))
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


def test_the_checker_sees_an_upward_and_a_sideways_import():
    """The check itself: a planner reading a renderer and the advisor reading the cluster
    layer are both reported; a downward import is not."""
    upward = "from %smodule_utils.renderers import render_helm\n" % PREFIX
    sideways = "from %smodule_utils.cluster.node_labels import node_changes\n" % PREFIX
    downward = "from %smodule_utils.hardware.gpu_catalog import CATALOG\n" % PREFIX
    assert len(violations("planners", upward)) == 1
    assert len(violations("advisor", sideways)) == 1
    assert violations("planners", downward) == []
    assert violations("names", "import %smodules.plan\n" % PREFIX) != []


def test_architecture_doc_lists_the_layers():
    """docs/architecture.md's layer table names every subpackage with its height."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    for layer, height in LAYERS.items():
        where = "plugins/module_utils/%s%s" % (layer, ".py" if layer == "names" else "/")
        assert "| %d | `%s` |" % (height, where) in doc, (layer, height)
