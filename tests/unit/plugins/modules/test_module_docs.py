# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-doc shows every module of plugins/modules/ with a real description of each option
(suboptions included) and each return value."""
import json

from ansible_doc import ROOT, ansible_doc, poor_descriptions  # noqa: E402

MODULES = sorted("gpushare.cluster." + p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))


def test_ansible_doc_describes_every_module_option_and_return_value():
    assert "UNDOCUMENTED" not in ansible_doc(*MODULES)
    plugins = json.loads(ansible_doc("--json", *MODULES))
    assert sorted(plugins) == MODULES
    poor = ["%s %s" % (name, found) for name, plugin in plugins.items() for found in poor_descriptions(plugin)]
    assert not poor, poor
