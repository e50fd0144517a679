# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every public filter (plugins/filter/*.py but __*.py) has its ansible-doc file, as generated
from its signature, docstring and example (regenerate with tests/unit/gen_filter_docs.py);
ansible-doc lists those and no internal filter of the roles (plugins/filter/__*.py), and shows
every one with a real description of each argument; and every filter, public or internal, has
a caller in roles/ or playbooks/."""
import json
import re

import yaml

from ansible_doc import ansible_doc, poor_descriptions  # noqa: E402
from gen_filter_docs import FILTER_DIR, ROOT, expected_files, filter_plugins  # noqa: E402

FILTERS = sorted(expected_files())
INTERNAL = sorted(name for filters in filter_plugins(public=False).values() for name in filters)


def test_every_filter_has_its_generated_doc_file():
    stale = []
    for name, text in expected_files().items():
        path = FILTER_DIR / ("%s.yml" % name)
        if not path.exists() or path.read_text() != text:
            stale.append(name)
        else:
            doc = yaml.safe_load(text)["DOCUMENTATION"]
            assert doc["name"] == name and doc["short_description"] and doc["options"]["_input"]
    assert not stale, "missing or stale (run tests/unit/gen_filter_docs.py): %s" % stale
    orphans = sorted(p.stem for p in FILTER_DIR.glob("*.yml") if p.stem not in FILTERS)
    assert not orphans, "doc files of no filter (remove them): %s" % orphans


def test_ansible_doc_lists_every_filter_documented():
    out = ansible_doc("-t", "filter", "-l", "gpushare.cluster")
    listed = {line.split()[0].split(".")[-1]: line for line in out.splitlines() if line.strip()}
    assert sorted(listed) == FILTERS and not set(INTERNAL) & set(FILTERS)
    undocumented = [line for line in listed.values() if "UNDOCUMENTED" in line]
    assert not undocumented, undocumented


def test_ansible_doc_describes_every_argument_and_result():
    names = ["gpushare.cluster." + name for name in FILTERS]
    text = ansible_doc("-t", "filter", *names)
    assert "UNDOCUMENTED" not in text
    assert not re.search(r"^\s*(\w+\s+)?Argument \w+\.$", text, re.M)
    plugins = json.loads(ansible_doc("-t", "filter", "--json", *names))
    assert sorted(plugins) == names
    assert all(plugin["doc"]["author"] == "gpushare.cluster contributors" for plugin in plugins.values())
    # ansible-doc's own markup, not reStructuredText's ``code`` shown as it is.
    assert "``" not in text
    poor = ["%s %s" % (name, found) for name, plugin in plugins.items() for found in poor_descriptions(plugin)]
    assert not poor, poor


def test_every_filter_has_a_caller_in_roles_or_playbooks():
    files = [p for folder in ("roles", "playbooks") for p in (ROOT / folder).rglob("*.yml")]
    text = "\n".join(p.read_text() for p in files)
    uncalled = [name for name in FILTERS + INTERNAL if not re.search(r"\|\s*gpushare\.cluster\.%s\b" % name, text)]
    assert not uncalled, "filters no role or playbook calls (call or remove them): %s" % uncalled
