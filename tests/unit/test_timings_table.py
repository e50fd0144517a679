# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/timings_table.py turns the suite timings tests/run-all.sh records into docs/testing.md's
table, between its markers, and nothing else of the page changes."""

from __future__ import annotations

import importlib.util

import pytest

from inventories import ROOT

_spec = importlib.util.spec_from_file_location("timings_table", ROOT / "tests" / "timings_table.py")
timings_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(timings_table)

RUN = ("# commit abc1234, started 2026-12-05 09:00 UTC, 2 cores, load average: 1.00, 1.50, 2.00\n"
       "suite\tseconds\tresult\n10-unit\t197\tpassed\n20-sanity\t45\tpassed\n50-twin\t1185\tfailed\n"
       "# total 2530 s\n")


def test_a_run_becomes_a_table_with_its_source_and_total():
    assert timings_table.table(RUN) == (
        "From `make test`, commit abc1234, started 2026-12-05 09:00 UTC, 2 cores, load average: 1.00, 1.50, 2.00 "
        "(`build/suite-timings.tsv`); table written by `tests/timings_table.py`.\n\n"
        "| suite | wall time | result |\n|---|---|---|\n"
        "| 10-unit | 197 s (3 min 17 s) | passed |\n"
        "| 20-sanity | 45 s | passed |\n"
        "| 50-twin | 1185 s (19 min 45 s) | failed |\n"
        "| all of `make test` | 2530 s (42 min 10 s) | failed |\n")


def test_figures_from_elsewhere_say_where_from():
    text = timings_table.table("# source: the CI run of 2026-12-04, typed in\nsuite\tseconds\tresult\n10-unit\t240\tpassed\n")
    assert text.startswith("From the CI run of 2026-12-04, typed in; table written by")


def test_only_the_text_between_the_markers_changes(tmp_path):
    page = tmp_path / "testing.md"
    page.write_text("# Testing\n\nintro\n\n<!-- suite-timings:start -->\nold table\n<!-- suite-timings:end -->\n\nrest\n")
    tsv = tmp_path / "suite-timings.tsv"
    tsv.write_text(RUN)
    assert timings_table.main(["--tsv", str(tsv), "--write", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Testing\n\nintro\n\n<!-- suite-timings:start -->\nFrom `make test`, commit abc1234")
    assert text.endswith("| failed |\n<!-- suite-timings:end -->\n\nrest\n") and "old table" not in text


def test_a_page_without_its_markers_or_a_run_without_suites_is_refused():
    with pytest.raises(ValueError, match="needs one <!-- suite-timings:start -->"):
        timings_table.replace_table("# Testing\n", "table")
    with pytest.raises(ValueError, match="no suite"):
        timings_table.table("# commit abc\nsuite\tseconds\tresult\n")


def test_docs_testing_holds_the_table_of_a_run():
    page = (ROOT / "docs" / "testing.md").read_text()
    inside = page.split(timings_table.START)[1].split(timings_table.END)[0]
    assert "| suite | wall time | result |" in inside and "10-unit" in inside
