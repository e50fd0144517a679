# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One licence everywhere (galaxy.yml, LICENSE, Python headers, role metas), no placeholder
URLs in galaxy.yml, and the installed-collection playbook names the README documents."""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SPDX = "GPL-3.0-or-later"
HEADER = "# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)"


def test_galaxy_and_license_file_agree():
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert galaxy["license"] == [SPDX]
    text = (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text
    for key in ("repository", "documentation", "homepage", "issues"):
        assert "example." not in str(galaxy.get(key, "")), (key, galaxy[key])


def test_every_role_meta_has_the_collection_licence():
    metas = sorted((ROOT / "roles").glob("*/meta/main.yml"))
    assert metas
    wrong = {m.parent.parent.name: yaml.safe_load(m.read_text())["galaxy_info"].get("license")
             for m in metas if yaml.safe_load(m.read_text())["galaxy_info"].get("license") != SPDX}
    assert not wrong, wrong


def test_every_plugin_has_the_licence_header():
    files = sorted((ROOT / "plugins").rglob("*.py"))
    assert files
    missing = [str(f.relative_to(ROOT)) for f in files if f.name != "__init__.py" and HEADER not in f.read_text()]
    assert not missing, missing


def test_readme_documents_both_ways_to_run_the_playbooks():
    readme = (ROOT / "README.md").read_text()
    for text in ("ansible-playbook -i my-inventory/hosts.yml gpushare.cluster.site", "ansible-playbook -i my-inventory/hosts.yml gpushare.cluster.plan",
                 "playbooks/site.yml"):
        assert text in readme, text
