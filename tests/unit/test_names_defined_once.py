# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every Kubernetes name, label, annotation, resource name, field manager, default namespace
and version pin is defined once, in plugins/module_utils/names.py, and the artifacts directory
once, in the gpushare.cluster.artifacts_dir lookup. Python imports them; roles and playbooks
read them through the filters k8s_name, pinned_version and managed_label and that lookup.

What counts as writing one again (code, not prose):
- Python under plugins/ other than names.py: a string constant equal to the name; for a
  version, one containing it without a space (a tag, a URL, an image), as a sentence citing
  the version a fact was checked against is prose. Docstrings, comments, the DOCUMENTATION,
  EXAMPLES and RETURN of a plugin, and the keys of names.VERSIONS do not count.
- YAML under roles/ and playbooks/ (Molecule scenarios, which are tests, aside): a key or value
  equal to the name or naming it in quotes inside a template ('name'), or containing it for a
  version or the artifacts path. Comments and the prose keys (description, msg, ...) do not
  count. The filter docs plugins/filter/*.yml are generated from the code (gen_filter_docs.py).
"""

from __future__ import annotations

import ast

import pytest
import yaml

from ansible_collections.gpushare.cluster.plugins.module_utils import names

from inventories import ROOT

NAMES_PY = ROOT / "plugins" / "module_utils" / "names.py"
PROSE_KEYS = {"description", "short_description", "msg", "fail_msg", "success_msg"}
DOC_ASSIGNMENTS = {"DOCUMENTATION", "EXAMPLES", "RETURN"}

# The literals issue 17 found written in several places; each is a name of names.py now.
FOUND_SCATTERED = ["gpushare-mig-config", "gpushare-device-plugin-config", "nvidia.com/mig.config",
                   "nvidia.com/mig.config.state", "nvidia.com/device-plugin.config", "gpushare.cluster/gpu-model",
                   "nvidia.com/gpu", "all-disabled", "app.kubernetes.io/managed-by", "nvidia.com/dra-kubelet-plugin",
                   "gpushare.cluster/managed-labels", "gpushare.cluster/gpu-layout-since"]
# Names too common to look for everywhere ("gpushare", "monitoring", "default", "1", "kueue",
# "gpushare.cluster", "nvidia"): the field manager is looked for under YAML keys ending in field_manager,
# the two namespaces under keys ending in namespace and as Python constants, the rest not.
FIELD_MANAGER_KEYS = ("field_manager",)
NAMESPACE_KEYS = ("namespace",)
IN_CONTEXT = {names.FIELD_MANAGER, names.GPU_OPERATOR_NAMESPACE, names.MONITORING_NAMESPACE,
              names.DEVICE_PLUGIN_DEFAULT_CONFIG, names.GRAFANA_DASHBOARD_LABEL_VALUE, names.KUEUE_FULLNAME,
              names.MANAGED_BY_VALUE, names.NVIDIA_RUNTIME_CLASS_PREFIX}
# The artifacts directory as a path: the expression the lookup replaced ended in '/artifacts'.
ARTIFACTS_PATH = "/" + names.ARTIFACTS_DIR


class _Loader(yaml.SafeLoader):
    """Ansible YAML: !unsafe and !vault scalars read as their text."""


for _tag in ("!unsafe", "!vault"):
    _Loader.add_constructor(_tag, lambda loader, node: loader.construct_scalar(node))


def defined_names() -> list[str]:
    """Every string constant of names.py (the version pins apart)."""
    return sorted({value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)})


# --- the scanners ----------------------------------------------------------------------------

def python_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of the string constants of ``source`` that are code, not documentation."""
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))         # a docstring
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_ASSIGNMENTS for t in node.targets):
            skip.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("VERSIONS"):
            skip.add(id(node.slice))            # a key of names.VERSIONS, e.g. "gpu-operator"
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def yaml_strings(text: str) -> list[tuple[str, str]]:
    """(key, text) of every scalar value of the YAML documents in ``text`` with the mapping key
    it sits under (prose keys left out), and ("", key) for every mapping key."""
    found = []

    def walk(node, key):
        if isinstance(node, dict):
            for k, v in node.items():
                found.append(("", str(k)))
                if str(k) not in PROSE_KEYS:
                    walk(v, str(k))
        elif isinstance(node, list):
            for item in node:
                walk(item, key)
        elif isinstance(node, str):
            found.append((key, node))

    for document in yaml.load_all(text, Loader=_Loader):
        walk(document, "")
    return found


def names_it(text: str, name: str) -> bool:
    """``text`` is ``name``, or a template naming it as a quoted string."""
    return text == name or "'%s'" % name in text or '"%s"' % name in text


def python_files():
    return sorted(p for p in (ROOT / "plugins").rglob("*.py") if p != NAMES_PY)


def yaml_files():
    return sorted(p for top in ("roles", "playbooks") for p in (ROOT / top).rglob("*.yml")
                  if "molecule" not in p.relative_to(ROOT).parts)


def where(path, place) -> str:
    return "%s:%s" % (path.relative_to(ROOT), place)


PYTHON = {path: python_strings(path.read_text()) for path in python_files()}
YAML = {path: yaml_strings(path.read_text()) for path in yaml_files()}


def python_hits(test) -> list[str]:
    return [where(path, line) for path, strings in PYTHON.items() for line, text in strings if test(text)]


def yaml_hits(test) -> list[str]:
    return [where(path, key or "-") for path, strings in YAML.items() for key, text in strings if test(key, text)]


# --- the tests -------------------------------------------------------------------------------

def test_the_scattered_literals_are_names_of_names_py():
    assert set(FOUND_SCATTERED) <= set(defined_names())


@pytest.mark.parametrize("name", [n for n in defined_names() if n not in IN_CONTEXT])
def test_name_written_nowhere_else(name):
    hits = python_hits(lambda text: text == name) + yaml_hits(lambda key, text: names_it(text, name))
    assert hits == [], "%r is defined in names.py; import it or use gpushare.cluster.k8s_name: %s" % (name, hits)


@pytest.mark.parametrize("component", sorted(names.VERSIONS))
def test_version_pinned_nowhere_else(component):
    version = names.VERSIONS[component]
    hits = python_hits(lambda text: version in text and " " not in text) + yaml_hits(lambda key, text: version in text)
    assert hits == [], "%s %s is pinned in names.VERSIONS; use gpushare.cluster.pinned_version: %s" % (component, version, hits)


def test_every_field_manager_is_the_one_of_names_py():
    """The server-side apply field manager (the name live objects record as their owner)."""
    hits = yaml_hits(lambda key, text: key.endswith(FIELD_MANAGER_KEYS)
                     and ("{{" not in text or names_it(text, names.FIELD_MANAGER)))
    assert hits == [], "field managers not read from names.py: %s" % hits


@pytest.mark.parametrize("namespace", [names.GPU_OPERATOR_NAMESPACE, names.MONITORING_NAMESPACE])
def test_default_namespace_written_nowhere_else(namespace):
    hits = python_hits(lambda text: text == namespace) + yaml_hits(
        lambda key, text: key.endswith(NAMESPACE_KEYS) and names_it(text, namespace))
    assert hits == [], hits


def test_the_artifacts_directory_is_the_lookup():
    hits = python_hits(lambda text: text == names.ARTIFACTS_DIR or ARTIFACTS_PATH in text) + yaml_hits(
        lambda key, text: ARTIFACTS_PATH in text or "inventory_dir | default(playbook_dir" in text)
    assert hits == [], "use lookup('gpushare.cluster.artifacts_dir'): %s" % hits


def test_the_scanners_see_a_name_written_again():
    """The check itself: a name written in Python or YAML code is seen; in prose it is not."""
    code = 'CONFIGMAP = "gpushare-mig-config"\n\n\ndef f():\n    """gpushare-mig-config"""\n'
    assert [text for _where, text in python_strings(code)] == ["gpushare-mig-config"]
    task = ("- name: Apply\n  kubernetes.core.k8s:\n    server_side_apply:\n      field_manager: gpushare\n"
            "  vars:\n    _cm: \"{{ cms | selectattr('name', 'equalto', 'gpushare-mig-config') }}\"\n"
            "    description: gpushare-mig-config\n")
    strings = yaml_strings(task)
    assert ("field_manager", "gpushare") in strings
    assert [key for key, text in strings if names_it(text, "gpushare-mig-config")] == ["_cm"]
