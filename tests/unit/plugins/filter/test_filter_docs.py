# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every filter of plugins/filter/gpushare.py has its ansible-doc file, as generated from its
signature and docstring (regenerate with tests/unit/gen_filter_docs.py)."""
import os
import subprocess
import sys
from pathlib import Path

import yaml

from gen_filter_docs import ROOT, expected_files  # noqa: E402


def test_every_filter_has_its_generated_doc_file():
    stale = []
    for name, text in expected_files().items():
        path = ROOT / "plugins" / "filter" / ("%s.yml" % name)
        if not path.exists() or path.read_text() != text:
            stale.append(name)
        else:
            doc = yaml.safe_load(text)["DOCUMENTATION"]
            assert doc["name"] == name and doc["short_description"] and doc["options"]["_input"]
    assert not stale, "missing or stale (run tests/unit/gen_filter_docs.py): %s" % stale


def test_ansible_doc_shows_them():
    ansible_doc = Path(sys.executable).parent / "ansible-doc"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"))
    out = subprocess.run([str(ansible_doc), "-t", "filter", "-l", "gpushare.cluster"], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    listed = {line.split()[0].split(".")[-1]: line for line in out.splitlines() if line.strip()}
    for name in expected_files():
        assert name in listed and "UNDOCUMENTED" not in listed[name], (name, listed.get(name))
