# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-doc of this checkout's collection, and the option and return descriptions it shows,
for the tests that every filter and module option is documented with more than filler."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Descriptions that say nothing: what gen_filter_docs.py wrote before the docstrings had Args:.
FILLER = [re.compile(r"^Argument \w+\.$"), re.compile(r"^The value the filter is applied to\.$"),
          re.compile(r"^The result \(see the description\)\.$")]


def ansible_doc(*args: str) -> str:
    """The standard output of ``ansible-doc ARGS`` (fails on a non-zero exit)."""
    command = [str(Path(sys.executable).parent / "ansible-doc"), *args]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"))
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout


def descriptions(doc: dict, prefix: str = ""):
    """(path, description text) of every option (suboptions included) of a documentation's
    ``options`` or every value of its ``return`` (``contains`` included)."""
    for name, entry in (doc or {}).items():
        path = prefix + name
        text = entry.get("description")
        yield path, " ".join(text) if isinstance(text, list) else (text or "")
        yield from descriptions(entry.get("suboptions"), path + ".")
        yield from descriptions(entry.get("contains"), path + ".")


def poor_descriptions(plugin: dict) -> list[str]:
    """``path: text`` of the options and return values of one plugin's ``ansible-doc --json``
    entry whose description is missing or filler."""
    found = []
    for section in ("options", "return"):
        where = plugin["doc"].get("options") if section == "options" else plugin.get("return")
        for path, text in descriptions(where):
            if not text.strip() or any(f.match(text.strip()) for f in FILLER):
                found.append("%s %s: %r" % (section, path, text))
    return found
