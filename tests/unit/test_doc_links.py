# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every relative link of README.md and docs/**/*.md resolves: the file or folder exists, and a
``#anchor`` names a heading of the target (GitHub's anchors: the heading in lower case, without
punctuation but ``-`` and ``_``, spaces as ``-``, a repeated heading ``-1``, ``-2``, ...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link there is code, not a link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown page's headings."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(text):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else "%s-%d" % (slug, count))
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    text = page.read_text()
    for line in _prose(text):
        # Inline code is not a link either.
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto: ...
                continue
            path, _hash, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                problems.append("%s: %s (no such file)" % (page.relative_to(root), target))
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
                problems.append("%s: %s (no heading with that anchor)" % (page.relative_to(root), target))
    return problems


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_anchors_follow_githubs_rules():
    text = "# Getting started\n## 1. What is supported\n## The plan changes nvidia.com/mig.config on a node\n" \
           "## Notes\n## Notes\n```\n# not a heading\n```\n"
    assert anchors(text) == {"getting-started", "1-what-is-supported", "notes", "notes-1",
                             "the-plan-changes-nvidiacommigconfig-on-a-node"}


def test_a_missing_file_and_a_missing_anchor_are_reported(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# Here\n")
    page.write_text("[a](there.md#here) [b](there.md#gone) [c](missing.md) [d](https://x.org/y) `[e](nope.md)`\n"
                    "```\n[f](nope.md)\n```\n[g](#page) \n# Page\n")
    assert broken_links(page, tmp_path) == ["page.md: there.md#gone (no heading with that anchor)",
                                            "page.md: missing.md (no such file)"]
