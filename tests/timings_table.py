# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The table of suite timings in docs/testing.md, written from a run rather than by hand.

tests/run-all.sh (``make test``) writes build/suite-timings.tsv: ``#`` lines (the commit, when it
started, the cores and load, the total; ``# source: ...`` instead names figures typed in from
elsewhere), a header, then one row per suite (suite, seconds, result). This turns it into a Markdown table and, with --write, puts it between the markers
``<!-- suite-timings:start -->`` and ``<!-- suite-timings:end -->`` of a page, leaving the rest
of the page as it is.

    python3 tests/timings_table.py                                  # print the table of build/suite-timings.tsv
    python3 tests/timings_table.py --write docs/testing.md          # replace the page's table
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- suite-timings:start -->", "<!-- suite-timings:end -->"


def read_timings(text: str) -> tuple[list[str], list[tuple[str, int, str]]]:
    """(the # lines without their #, [(suite, seconds, result)]) of a suite-timings.tsv."""
    notes, rows = [], []
    for line in text.splitlines():
        if line.startswith("#"):
            notes.append(line[1:].strip())
        elif line.strip() and not line.startswith("suite\t"):
            suite, seconds, result = line.split("\t")
            rows.append((suite, int(seconds), result))
    if not rows:
        raise ValueError("no suite in the timings")
    return notes, rows


def _duration(seconds: int) -> str:
    return "%d s" % seconds if seconds < 60 else "%d s (%d min %d s)" % (seconds, seconds // 60, seconds % 60)


def table(text: str) -> str:
    """The Markdown of one run's timings: where they come from, then suite, wall time, result."""
    notes, rows = read_timings(text)
    total = next((int(n.split()[1]) for n in notes if n.startswith("total ")), None)
    source = next((n.split(":", 1)[1].strip() for n in notes if n.startswith("source:")), None)
    details = "; ".join(n for n in notes if not n.startswith(("total ", "source:")))
    caption = source or "`make test`, %s (`build/suite-timings.tsv`)" % (details or "no details recorded")
    lines = ["From %s; table written by `tests/timings_table.py`." % caption,
             "", "| suite | wall time | result |", "|---|---|---|"]
    lines += ["| %s | %s | %s |" % (suite, _duration(seconds), result) for suite, seconds, result in rows]
    if total is not None:
        lines.append("| all of `make test` | %s | %s |" % (
            _duration(total), "passed" if all(r == "passed" for _name, _seconds, r in rows) else "failed"))
    return "\n".join(lines) + "\n"


def replace_table(page: str, new_table: str) -> str:
    """The page with the text between the markers replaced by the table."""
    if page.count(START) != 1 or page.count(END) != 1 or page.index(START) > page.index(END):
        raise ValueError("the page needs one %s and one %s after it" % (START, END))
    before, rest = page.split(START)
    _old, after = rest.split(END)
    return before + START + "\n" + new_table + END + after


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsv", default=str(ROOT / "build" / "suite-timings.tsv"))
    parser.add_argument("--write", metavar="PAGE", help="replace the table between the markers of PAGE")
    args = parser.parse_args(argv)
    text = table(Path(args.tsv).read_text())
    if args.write:
        page = Path(args.write)
        page.write_text(replace_table(page.read_text(), text))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
